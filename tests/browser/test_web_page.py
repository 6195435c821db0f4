"""The web page as a person uses it, in headless Chromium: sign in, make a KB, upload,
watch the files get indexed, ask, click a citation and see the cited passage highlighted
(on the PDF's page itself, then in the extracted text);
what a second user may not see; document text and names that are HTML stay text."""

from __future__ import annotations

import re
import time

import httpx
import pytest

LINK = r"#/file/(\w+)\?start=(\d+)&end=(\d+)"
pytestmark = [pytest.mark.browser]

# No double quotes: browsers send them as %22 in a multipart file name.
PAYLOAD_NAME = "<img src=x onerror=alert('name')>.txt"
PAYLOAD_TEXT = (
    "Quarterly payload notes. <script>window.__pwned='script'</script> "
    "<img src=x onerror=\"window.__pwned='text'\"> The zebrafish budget is forty crowns."
)


def sign_in(page, site, name: str, password: str) -> None:
    page.goto(site.url + "/")
    form = page.locator("form", has=page.get_by_role("heading", name="With your name and password"))
    form.get_by_label("Name").fill(name)
    form.get_by_label("Password").fill(password)
    form.get_by_role("button", name="Sign in").click()
    page.get_by_role("heading", name="Knowledge bases", level=1).wait_for()


def create_kb(page, name: str) -> None:
    page.goto(page.url.split("#")[0] + "#/kbs")
    page.get_by_role("form", name="New knowledge base").get_by_label("Name").fill(name)
    page.get_by_role("button", name="Create").click()
    page.get_by_role("heading", name=name, level=1).wait_for()


def wait_indexed(page, count: int) -> None:
    page.wait_for_function(
        "n => document.querySelectorAll('li.job[data-state=indexed]').length >= n",
        arg=count,
        timeout=120_000,
    )


def shot(page, artifacts, name: str) -> None:
    page.screenshot(path=str(artifacts / f"{name}.png"), full_page=True)


def assert_opens_the_supporting_sentence(page, chip, start: int, end: int) -> None:
    """A chip opens the sentence that supports the answer (its attribution): a span inside
    its source's chunk, shorter than the chunk the sources list opens."""
    number = chip.inner_text()
    listed = page.locator(f"ol.sources li[value='{number}'] a").first.get_attribute("href")
    _, chunk_start, chunk_end = re.match(LINK, listed).groups()
    assert int(chunk_start) <= start < end <= int(chunk_end)
    assert end - start < int(chunk_end) - int(chunk_start)


def test_upload_ask_and_open_the_cited_passage(page, site, shared_docs, artifacts):
    sign_in(page, site, "ada", site.admin_password)
    shot(page, artifacts, "knowledge-bases-empty")
    create_kb(page, "handbook")
    files = [shared_docs / n for n in ("multi_page.pdf", "wiki_duck.html", "codeblock.md")]
    page.set_input_files("#pick-files", [str(f) for f in files])
    wait_indexed(page, 3)
    page.get_by_role("table", name="Files in handbook").wait_for()
    rows = page.get_by_role("table", name="Files in handbook").locator("tbody tr")
    assert rows.count() == 3
    assert page.locator("li.job[data-state=failed]").count() == 0
    shot(page, artifacts, "knowledge-base")

    page.get_by_role("link", name="Ask this knowledge base").click()
    page.get_by_label("Your question").fill("Who patented the typewriter in 1868?")
    page.get_by_role("button", name="Send").click()
    chip = page.locator("a.chip").first
    chip.wait_for(timeout=60_000)
    assert page.locator(".badge", has_text="extractive answer").is_visible()
    assert "Sholes" in page.locator(".answer").last.inner_text()
    page.get_by_text("Retrieval trace").click()
    assert "timings_ms" in page.locator(".trace pre").inner_text()
    hits = page.get_by_role("table", name=re.compile("Hits for")).first.inner_text()
    assert "BM25 rank" in hits and "multi_page.pdf" in hits
    shot(page, artifacts, "chat")

    href = chip.get_attribute("href")
    file_id, start, end = re.match(LINK, href).groups()
    assert_opens_the_supporting_sentence(page, chip, int(start), int(end))
    chip.click()
    # a PDF: the cited page itself, the passage's lines highlighted on it
    page_mark = page.locator(".page-mark").first
    page_mark.wait_for()
    image = page.locator(".page-view img")
    assert image.evaluate("i => i.complete && i.naturalWidth > 500")
    frame, box = image.bounding_box(), page_mark.bounding_box()
    assert frame["x"] <= box["x"] and box["x"] + box["width"] <= frame["x"] + frame["width"] + 1
    assert frame["y"] <= box["y"] and box["y"] + box["height"] <= frame["y"] + frame["height"] + 1
    assert box["height"] < frame["height"] / 4  # lines, not the page
    assert page_mark.evaluate("m => m === document.activeElement") and in_viewport(page, page_mark)
    shot(page, artifacts, "viewer-page")
    page.get_by_role("button", name="Show the extracted text").click()
    mark = page.locator("mark.cited-span").first
    mark.wait_for()
    with httpx.Client(base_url=site.url, headers={"Authorization": f"Bearer {key_of(page)}"}) as c:
        text = c.get(f"/api/v1/files/{file_id}/text").json()["text"]
    shown = "".join(page.locator("mark.cited-span").all_inner_texts())
    assert norm(shown) == norm(text[int(start) : int(end)])
    assert mark.evaluate("m => m === document.activeElement")  # focused, so read out
    assert mark.is_visible() and in_viewport(page, mark)
    assert page.locator(".marker.page").count() >= 2  # the PDF's pages are marked
    shot(page, artifacts, "viewer")
    assert page.problems == []


def test_search_playground_shows_each_mode(page, site, artifacts):
    sign_in(page, site, "ada", site.admin_password)
    page.get_by_role("link", name="Search").click()
    page.get_by_label("Query").fill("mallard duck")
    page.get_by_role("button", name="Search").click()
    for mode in ("hybrid", "vector", "bm25"):
        column = page.get_by_role("region", name=f"{mode} results")
        column.locator("li").first.wait_for()
    assert "wiki_duck" in page.get_by_role("region", name="bm25 results").inner_text()
    shot(page, artifacts, "search")
    assert page.problems == []


def test_document_html_is_shown_as_text(page, site, artifacts):
    sign_in(page, site, "ada", site.admin_password)
    create_kb(page, "payloads")
    page.on("dialog", lambda d: (page.problems.append(f"dialog: {d.message}"), d.dismiss()))
    payload = {"name": PAYLOAD_NAME, "mimeType": "text/plain", "buffer": PAYLOAD_TEXT.encode()}
    page.set_input_files("#pick-files", files=[payload])
    wait_indexed(page, 1)
    table = page.get_by_role("table", name="Files in payloads")
    table.get_by_text(PAYLOAD_NAME).wait_for()  # the name, as text
    table.get_by_role("link", name=PAYLOAD_NAME).click()
    page.locator(".doc").wait_for()
    assert "<script>window.__pwned='script'</script>" in page.locator(".doc").inner_text()
    page.goto(site.url + "/#/search")
    page.get_by_role("checkbox", name="payloads").check()
    page.get_by_label("Query").fill("zebrafish budget")
    page.get_by_role("button", name="Search").click()
    page.get_by_role("region", name="bm25 results").locator("li").first.wait_for()
    page.goto(site.url + "/#/chat")
    page.get_by_role("checkbox", name="payloads").check()
    page.get_by_label("Your question").fill("What is the zebrafish budget?")
    page.get_by_role("button", name="Send").click()
    page.locator("a.chip").first.wait_for(timeout=60_000)
    shot(page, artifacts, "payload-chat")
    assert page.evaluate("window.__pwned") is None
    assert page.locator("img").count() == 0  # no element made from the payload
    assert page.problems == []


def test_a_second_user_sees_no_admin_page_and_no_other_kb(page, site, artifacts):
    sign_in(page, site, "bob", site.user_password)
    assert page.get_by_role("link", name="Admin").count() == 0
    assert page.get_by_text("No knowledge base yet").is_visible()  # none of ada's
    page.goto(site.url + "/#/admin")
    page.get_by_text("This page is for admins only.").wait_for()
    assert page.locator("table").count() == 0
    key = key_of(page)
    with httpx.Client(base_url=site.url, headers={"Authorization": f"Bearer {key}"}) as c:
        assert c.get("/api/v1/settings").status_code == 403
        assert c.get("/api/v1/knowledge").json() == []
    shot(page, artifacts, "non-admin")


def test_admin_page_and_keys(page, site, artifacts):
    sign_in(page, site, "ada", site.admin_password)
    page.get_by_role("link", name="Admin").click()
    page.get_by_role("table", name="Users").wait_for()
    users = page.get_by_role("table", name="Users").inner_text()
    assert "ada" in users and "bob" in users
    settings = page.get_by_role("table", name="Effective settings").inner_text()
    assert "hybrid_search" in settings
    assert page.get_by_role("table", name=re.compile("The last 100 events")).is_visible()
    shot(page, artifacts, "admin")
    page.get_by_role("link", name="API keys").click()
    page.get_by_role("form", name="New API key").get_by_label("Name").fill("laptop")
    page.get_by_role("button", name="Create key").click()
    key = page.locator("code.new-key").inner_text()
    assert key.startswith("cw_")
    with httpx.Client(base_url=site.url, headers={"Authorization": f"Bearer {key}"}) as c:
        assert c.get("/api/v1/auth/me").json()["user"]["name"] == "ada"
    page.reload()
    assert page.locator("code.new-key").count() == 0  # shown once
    assert page.problems == []


def test_admin_changes_a_setting_at_run_time(page, site, artifacts):
    sign_in(page, site, "ada", site.admin_password)
    page.get_by_role("link", name="Admin").click()
    tuning = page.get_by_role("form", name="Run-time settings")
    tuning.get_by_label("top_k", exact=True).fill("3")
    tuning.get_by_role("button", name="Save changes").click()
    page.get_by_text("Saved: top_k.").wait_for()
    assert site.app.settings.retrieval.top_k == 3  # in force on the server at once
    page.get_by_text("changed at run time; start-up value: 8").wait_for()
    shot(page, artifacts, "admin-tuning")
    page.get_by_role("button", name="Reset all to start-up values").click()
    page.get_by_text("Back to the start-up values.").wait_for()
    assert site.app.settings.retrieval.top_k == 8
    assert page.problems == []


def test_an_owner_sets_the_kbs_retrieval_defaults(page, site):
    sign_in(page, site, "ada", site.admin_password)
    create_kb(page, "tuned")
    defaults = page.get_by_role("form", name="Retrieval defaults")
    defaults.get_by_label("top_k").fill("3")
    defaults.get_by_label("mode").select_option("bm25")
    defaults.get_by_label("rerank").select_option("false")
    defaults.get_by_role("button", name="Save retrieval defaults").click()
    page.get_by_text("Retrieval defaults saved.").wait_for()
    own = site.app.catalog.get_kb("tuned").settings
    assert (own.top_k, own.mode.value, own.rerank, own.full_context) == (3, "bm25", False, None)
    assert page.problems == []


def test_an_owner_sets_the_kbs_own_chunking(page, site):
    sign_in(page, site, "ada", site.admin_password)
    create_kb(page, "chunked")
    chunking = page.get_by_role("form", name="Chunking")
    chunking.get_by_label("text_splitter").select_option("token")
    chunking.get_by_label("chunk_size").fill("128")
    chunking.get_by_label("sentence_vectors").select_option("true")
    chunking.get_by_role("button", name="Save chunking").click()
    page.get_by_text("Chunking saved").wait_for()
    own = site.app.catalog.get_kb("chunked").settings
    assert own.chunking_map == {
        "text_splitter": "token",
        "chunk_size": 128,
        "sentence_vectors": True,
    }
    assert site.app.chunk_sets.labels.of(own_id(site, "chunked")).label.endswith("~1")
    assert page.problems == []


def own_id(site, name: str) -> str:
    return site.app.catalog.get_kb(name).id


def test_phone_width_and_keyboard(browser, site, artifacts):
    context = browser.new_context(viewport={"width": 390, "height": 844})
    page = context.new_page()
    sign_in(page, site, "ada", site.admin_password)
    overflow = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
    assert overflow <= 1
    page.reload()
    page.get_by_role("heading", name="Knowledge bases", level=1).wait_for()
    page.keyboard.press("Tab")  # the first stop is the skip link
    assert page.evaluate("document.activeElement.textContent") == "Skip to content"
    page.keyboard.press("Enter")
    assert page.evaluate("document.activeElement.id") == "main"
    shot(page, artifacts, "phone")
    context.close()


def key_of(page) -> str:
    return page.evaluate("localStorage.getItem('citewell.key')")


def norm(text: str) -> str:
    return " ".join(text.split())


def in_viewport(page, locator) -> bool:
    box = locator.bounding_box()
    height = page.viewport_size["height"]
    return box is not None and box["y"] < height and box["y"] + box["height"] > 0


def test_dropped_files_fail_with_their_reason_and_can_be_retried(page, site, artifacts):
    sign_in(page, site, "ada", site.admin_password)
    create_kb(page, "dropbox")
    page.locator(".drop").evaluate(
        """(zone) => {
            const transfer = new DataTransfer();
            transfer.items.add(new File(["%PDF-1.4 not really a pdf"], "broken.pdf",
                                        {type: "application/pdf"}));
            transfer.items.add(new File(["# Notes\\n\\nThe ferry leaves at nine."], "notes.md"));
            zone.dispatchEvent(new DragEvent("drop", {dataTransfer: transfer, bubbles: true}));
        }"""
    )
    failed = page.locator("li.job[data-state=failed]")
    failed.wait_for(timeout=120_000)
    wait_indexed(page, 1)
    assert "broken.pdf" in failed.inner_text() and "—" in failed.inner_text()  # the reason
    shot(page, artifacts, "failed-upload")
    failed.get_by_role("button", name="Retry broken.pdf").click()
    again = page.locator("li.job[data-state=failed]", has_text="broken.pdf")
    again.filter(has_text="(attempt 2)").wait_for(timeout=120_000)  # retried, failed again
    page.get_by_role("table", name="Files in dropbox").get_by_text("notes.md").wait_for()
    rename = page.get_by_role("form", name="Rename")
    rename.get_by_label("Name").fill("inbox")
    rename.get_by_role("button", name="Save").click()
    page.get_by_role("heading", name="inbox", level=1).wait_for()
    assert page.problems == []


def test_every_control_has_a_name(page, site):
    """Screen readers announce each field and button: every control has a label or a name."""
    sign_in(page, site, "ada", site.admin_password)
    controls = "main input, main select, main textarea, main button, header button, main a"
    nameless = """(selector) => [...document.querySelectorAll(selector)].filter(el => {
            const label = el.labels && el.labels.length ? el.labels[0].textContent : '';
            const name = (el.getAttribute('aria-label') || label || el.textContent).trim();
            return !name && el.type !== 'hidden';
        }).map(el => el.outerHTML.slice(0, 80))"""
    for view in ("#/kbs", "#/kb/handbook", "#/chat", "#/search", "#/keys", "#/admin"):
        page.goto(site.url + "/" + view)
        page.locator("main h1").wait_for()
        page.wait_for_load_state("networkidle")
        assert page.evaluate(nameless, controls) == [], view


def test_without_sign_in_on_loopback_the_page_opens(browser, tmp_path, onnx_embedder):
    from citewell.config import Settings
    from tests.api.conftest import run_server

    settings = Settings.load(data_dir=tmp_path, auth="none")
    with run_server(settings, onnx_embedder) as url:
        context = browser.new_context()
        page = context.new_page()
        page.goto(url + "/")
        page.get_by_role("heading", name="Knowledge bases", level=1).wait_for()
        assert page.get_by_text("No sign-in (auth=none)").is_visible()
        assert page.get_by_role("button", name="Sign out").is_hidden()
        context.close()


def test_folders_and_sources_of_a_kb(page, site, artifacts):
    """Files by folder (open one, its path, back to the top), and a folder connector listed
    with its last run, synced again with "Sync now"."""
    team = site.shares / "team"
    (team / "guides").mkdir(parents=True)
    (team / "guides" / "setup.md").write_text("# Setup\n\nInstall the Quokka toolkit first.")
    (team / "welcome.txt").write_text("Welcome to the team.")
    sign_in(page, site, "ada", site.admin_password)
    create_kb(page, "team-docs")
    kb_id = own_id(site, "team-docs")
    with httpx.Client(base_url=site.url, headers={"Authorization": f"Bearer {key_of(page)}"}) as c:
        made = c.post(
            f"/api/v1/knowledge/{kb_id}/connectors",
            json={"kind": "folder", "target": str(team), "name": "team share"},
        )
        assert made.status_code == 201, made.text
    page.reload()
    # The first run adds both; the folder's watch may run it again at once (unchanged).
    _wait_synced(page, ("2 added", "2 unchanged"))
    page.reload()
    files = page.get_by_role("table", name="Files in team-docs")
    files.get_by_role("button", name="Open folder guides").click()
    inside = page.get_by_role("table", name="Files in team-docs/guides")
    inside.get_by_role("link", name="setup.md").wait_for()
    assert page.get_by_role("navigation", name="Folder path").inner_text().endswith("guides")
    shot(page, artifacts, "folders")
    page.get_by_role("button", name="Top level of team-docs").click()
    page.get_by_role("table", name="Files in team-docs").get_by_role(
        "link", name="welcome.txt"
    ).wait_for()
    (team / "late.md").write_text("Arrived after the first sync.")
    page.get_by_role("button", name="Sync team share now").click()
    page.get_by_text("Sync of team share queued.").wait_for()
    # Synced by the button, or by the folder's watch just before it: either way it shows.
    _wait_synced(page, ("unchanged",), lambda: page.get_by_role("link", name="late.md").count())
    assert page.problems == []


def _wait_synced(page, counts: tuple[str, ...], seen=lambda: True) -> None:
    """Reload until the connector's last run shows one of these counts (the job runs on
    the server's worker) and ``seen`` says yes."""
    deadline = time.monotonic() + 60
    while True:
        page.reload()
        row = page.get_by_role("table", name="Sources of team-docs").locator("tbody tr")
        row.wait_for()
        text = row.inner_text()
        shown = any(count in text for count in counts)
        if shown and row.get_attribute("data-state") == "ok" and seen():
            return
        assert time.monotonic() < deadline, text
        time.sleep(0.5)


def test_a_slow_view_never_replaces_the_one_asked_for_after_it(page, site):
    """The list of KBs answers slowly; the person moves on to their keys meanwhile: the
    keys stay when the list arrives (and what they typed there with them)."""
    sign_in(page, site, "ada", site.admin_password)
    page.evaluate("location.hash = '#/search'")
    page.get_by_role("heading", name="Search", level=1).wait_for()
    page.evaluate(
        """() => {
            const real = window.fetch;  // the KB list's answer comes 1.5 s late
            window.fetch = (url, init) => String(url).endsWith("/api/v1/knowledge")
                ? new Promise((done) => setTimeout(done, 1500)).then(() => real(url, init))
                : real(url, init);
            location.hash = "#/kbs";
            setTimeout(() => { location.hash = "#/keys"; }, 100);
        }"""
    )
    page.get_by_role("heading", name="API keys", level=1).wait_for()
    page.get_by_label("Name").first.fill("typed meanwhile")
    page.wait_for_timeout(2500)  # the list's answer has come by now
    assert page.get_by_role("heading", level=1).all_inner_texts() == ["API keys"]
    assert page.get_by_label("Name").first.input_value() == "typed meanwhile"
