// The page's only way to the server: the public API, with the key the user signed in with.

const KEY = "citewell.key";

export const session = { key: localStorage.getItem(KEY) || "", me: null };

export function remember(key) {
  session.key = key;
  if (key) localStorage.setItem(KEY, key);
  else localStorage.removeItem(KEY);
}

export class ApiError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

function headers(extra = {}) {
  return session.key ? { Authorization: `Bearer ${session.key}`, ...extra } : extra;
}

async function failure(response) {
  let message = `${response.status} ${response.statusText}`;
  let code = "";
  try {
    const body = await response.json();
    if (typeof body.detail === "string") message = body.detail;
    else if (body.detail) message = body.detail.map((d) => `${(d.loc || []).join(".")}: ${d.msg}`).join("; ");
    code = body.code || "";
  } catch {
    // not JSON: keep the status line
  }
  return new ApiError(response.status, code, message);
}

/** JSON in, JSON out; throws ApiError with the server's message (it says what to do). */
export async function api(path, { method = "GET", json, form, signal } = {}) {
  const init = { method, headers: headers(), signal };
  if (json !== undefined) {
    init.headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(json);
  } else if (form) {
    init.body = form;
  }
  const response = await fetch(path, init);
  if (!response.ok) throw await failure(response);
  return response.status === 204 ? null : response.json();
}

/** Server-sent events over fetch (EventSource cannot send the key): yields {event, data}. */
export async function* events(path, { method = "GET", json, signal } = {}) {
  const init = { method, headers: headers({ Accept: "text/event-stream" }), signal };
  if (json !== undefined) {
    init.headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(json);
  }
  const response = await fetch(path, init);
  if (!response.ok) throw await failure(response);
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buffer += value.replace(/\r\n/g, "\n");
    let end;
    while ((end = buffer.indexOf("\n\n")) >= 0) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      let event = "message";
      const data = [];
      for (const line of block.split("\n")) {
        if (line.startsWith("event:")) event = line.slice(6).trim();
        else if (line.startsWith("data:")) data.push(line.slice(5).replace(/^ /, ""));
      }
      if (data.length) yield { event, data: data.join("\n") };
    }
  }
}

/** Upload with progress (fetch cannot report bytes sent): resolves to the JSON answer. */
export function upload(path, form, onProgress) {
  return new Promise((resolve, reject) => {
    const xhr = new XMLHttpRequest();
    xhr.open("POST", path);
    if (session.key) xhr.setRequestHeader("Authorization", `Bearer ${session.key}`);
    xhr.upload.addEventListener("progress", (e) => e.lengthComputable && onProgress(e.loaded / e.total));
    xhr.addEventListener("load", async () => {
      const response = new Response(xhr.responseText, { status: xhr.status, statusText: xhr.statusText });
      if (xhr.status >= 200 && xhr.status < 300) resolve(JSON.parse(xhr.responseText));
      else reject(await failure(response));
    });
    xhr.addEventListener("error", () => reject(new ApiError(0, "network", "The upload failed: is the server running?")));
    xhr.send(form);
  });
}

/** An image the API serves (it needs the key, so no plain <img src>): an object URL. */
export async function imageUrl(path) {
  const response = await fetch(path, { headers: headers() });
  if (!response.ok) throw await failure(response);
  return URL.createObjectURL(await response.blob());
}

/** The original file, saved by the browser under its name. */
export async function download(file) {
  const response = await fetch(`/api/v1/files/${encodeURIComponent(file.id)}/content`, { headers: headers() });
  if (!response.ok) throw await failure(response);
  const url = URL.createObjectURL(await response.blob());
  const link = Object.assign(document.createElement("a"), { href: url, download: file.name });
  document.body.append(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10000);
}

export const kbPath = (id) => `/api/v1/knowledge/${encodeURIComponent(id)}`;
