// Building the page. Text from the server (document text, file names, answers) only ever
// becomes text nodes: nothing here parses a string as HTML.

export function h(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (name.startsWith("on") && typeof value === "function") {
      node.addEventListener(name.slice(2).toLowerCase(), value);
    } else if (name === "value") {
      node.value = value;
    } else if (name === "dataset") {
      Object.assign(node.dataset, value);
    } else if (name in node && typeof value !== "string") {
      node[name] = value;
    } else {
      node.setAttribute(name, value === true ? "" : String(value));
    }
  }
  append(node, children);
  return node;
}

export function append(node, children) {
  for (const child of children.flat(Infinity)) {
    if (child === undefined || child === null || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

export function clear(node, ...children) {
  node.replaceChildren();
  return append(node, children);
}

let noticeTimer = 0;

/** A message read out by screen readers; errors stay until the next notice. */
export function notice(text, kind = "info") {
  const box = document.getElementById("notice");
  clear(box, text ? h("p", { class: `notice ${kind}` }, text) : null);
  clearTimeout(noticeTimer);
  if (text && kind !== "error") noticeTimer = setTimeout(() => clear(box), 6000);
}

export function bytes(size) {
  const units = ["B", "KB", "MB", "GB"];
  let value = size;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit += 1;
  }
  return `${unit ? value.toFixed(1) : value} ${units[unit]}`;
}

export function when(seconds) {
  return seconds ? new Date(seconds * 1000).toLocaleString() : "";
}

/** A labelled form field: the label wraps the control, so both are announced together. */
export function field(label, control, hint) {
  return h("label", { class: "field" }, h("span", {}, label), control, hint ? h("small", {}, hint) : null);
}

/** A form whose submit runs `action`; its button is disabled meanwhile, errors are shown. */
export function form(attrs, children, action) {
  const node = h("form", attrs, children);
  node.addEventListener("submit", async (event) => {
    event.preventDefault();
    const buttons = node.querySelectorAll("button");
    buttons.forEach((b) => (b.disabled = true));
    try {
      await action(node);
    } catch (error) {
      notice(error.message, "error");
    } finally {
      buttons.forEach((b) => (b.disabled = false));
    }
  });
  return node;
}

export function table(caption, headers, rows) {
  return h(
    "table",
    {},
    h("caption", {}, caption),
    h("thead", {}, h("tr", {}, headers.map((name) => h("th", { scope: "col" }, name)))),
    h("tbody", {}, rows),
  );
}

/** A button that runs `action`, showing its error if it fails. */
export function button(label, action, attrs = {}) {
  return h("button", {
    type: "button",
    ...attrs,
    onclick: async (event) => {
      const target = event.currentTarget;
      target.disabled = true;
      try {
        await action(event);
      } catch (error) {
        notice(error.message, "error");
      } finally {
        target.disabled = false;
      }
    },
  }, label);
}
