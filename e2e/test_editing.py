"""A person fixes a line in real Chromium, by keyboard only, while a listener reads Spanish.

Real server and models: a presenter streams a real English sentence (tests/data); the editor
page (/e/{code}, an editor link made with the presenter token) shows its finals; the editor
tabs to the list, moves to the first line, opens it with Enter, retypes it and sends it with
Enter. A listener page in Spanish (Apertium) replaces both its lines in place, marked as
corrected, and the editor is offered the new word as a term.
"""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest
from playwright.sync_api import Browser, Dialog, Page, expect

from e2e.conftest import LAPTOP, PHONE, ConsoleLog, open_page
from tests.data import ENGLISH
from tests.support import create_session, read_wav, stream_recording

pytestmark = pytest.mark.browser

FIXED = "After early nightfall the yellow lamps of Quilter would light up here and there"


def focus_by_tab(page: Page, selector: str, tries: int = 15) -> None:
    """Press Tab until the element ``selector`` has the focus (keyboard only)."""
    for _ in range(tries):
        if page.evaluate(f"() => document.activeElement === document.querySelector('{selector}')"):
            return
        page.keyboard.press("Tab")
    raise AssertionError(f"Tab never reached {selector}")


def test_an_editor_fixes_a_line_by_keyboard_and_a_spanish_listener_sees_it(
    live_server: str, browser: Browser, console_log: ConsoleLog
) -> None:
    session = create_session(live_server, target_languages=["es"], title="editing")
    code, token = session["code"], session["presenter_token"]
    pcm, rate = read_wav(ENGLISH)
    with ThreadPoolExecutor(1) as thread:  # Playwright's loop runs in this one
        streaming = stream_recording(live_server, pcm, rate, speed=4.0, session=session)
        run = thread.submit(asyncio.run, streaming).result(timeout=120)
    assert run.close_code == 1000
    editor = httpx.post(
        f"{live_server}/api/sessions/{code}/editors",
        headers={"Authorization": f"Bearer {token}"},
    ).json()

    listener = open_page(browser, console_log, **PHONE)
    listener.goto(f"{live_server}/s/{code}?lang=es")
    listener.wait_for_function(
        "() => window.interpCaptions && window.interpCaptions.finals('es').length > 0",
        timeout=30_000,
    )
    before = listener.evaluate("() => window.interpCaptions.finals('es')")

    page = open_page(browser, console_log, **LAPTOP)
    page.goto(f"{live_server}{editor['edit_url']}")
    first = page.locator(".edit-line").first
    expect(first).to_be_visible(timeout=20_000)
    assert "#token=" not in page.url  # the secret left the address bar
    focus_by_tab(page, ".edit-lines")
    page.keyboard.press("End")
    page.keyboard.press("Home")
    expect(first).to_have_attribute("aria-selected", "true")
    page.keyboard.press("Enter")
    field = page.locator(".edit-input")
    expect(field).to_be_focused()
    page.keyboard.press("Control+a")
    page.keyboard.type(FIXED)
    page.keyboard.press("Enter")
    expect(page.locator(".edit-lines")).to_be_focused()
    expect(first).to_have_attribute("data-rev", "1", timeout=10_000)
    expect(first).to_contain_text("Quilter")
    expect(page.locator(".edit-offer-term", has_text="Quilter")).to_be_visible()

    # The listener's Spanish lines are replaced in place and marked as corrected (subtitle
    # lines, static/js/subtitle-state.js); the corrected source reached the page too.
    listener.wait_for_function(
        "() => window.interpCaptions.finals('es').some(([, text]) => text.includes('Quilter'))",
        timeout=10_000,
    )
    source_finals = listener.evaluate("() => window.interpCaptions.finals('en')")
    assert FIXED in [text for _, text in source_finals]
    corrected = listener.locator("#captions .caption-line[data-corrected]", has_text="Quilter")
    expect(corrected.first).to_be_visible(timeout=10_000)
    after = listener.evaluate("() => window.interpCaptions.finals('es')")
    assert after != before
    covered = listener.evaluate("() => window.interpCaptions.covered('es')")
    assert set(covered) == {e["segment"] for e in run.finals() if e["source"]}

    # Adding the offered term by keyboard: it joins the term list.
    page.locator(".edit-offer-term", has_text="Quilter").focus()
    page.keyboard.press("Enter")
    expect(page.locator(".edit-terms")).to_have_value("Quilter", timeout=10_000)
    terms = httpx.get(f"{live_server}/api/sessions/{code}/terms").json()["terms"]
    assert terms == ["Quilter"]
    transcript = httpx.get(
        f"{live_server}/api/sessions/{code}/transcript", params={"lang": "es"}
    ).text
    assert "Quilter" in transcript
    assert not console_log.errors, console_log.errors
    for opened in (page, listener):
        opened.context.close()


def test_the_console_panel_fixes_a_line_and_counts_in_the_audience_only_when_open(
    live_server: str, browser: Browser, console_log: ConsoleLog
) -> None:
    session = create_session(live_server, title="console editing")
    code, token = session["code"], session["presenter_token"]
    pcm, rate = read_wav(ENGLISH)
    with ThreadPoolExecutor(1) as thread:
        streaming = stream_recording(live_server, pcm, rate, speed=4.0, session=session)
        thread.submit(asyncio.run, streaming).result(timeout=120)
    page = open_page(browser, console_log, **LAPTOP)
    page.goto(f"{live_server}/p/{code}#token={token}")
    expect(page.locator("#share-listener-count")).to_have_text("0")
    summary = page.locator("#edit-details > summary")
    summary.focus()
    page.keyboard.press("Enter")
    first = page.locator(".edit-line").first
    expect(first).to_be_visible(timeout=20_000)
    page.locator(".edit-lines").focus()
    page.keyboard.press("Enter")
    page.keyboard.press("Control+a")
    page.keyboard.type("Fixed in the console")
    page.keyboard.press("Enter")
    expect(first).to_have_attribute("data-rev", "1", timeout=10_000)
    body = httpx.get(f"{live_server}/api/sessions/{code}/transcript").text
    assert body.splitlines()[0] == "Fixed in the console"
    assert not console_log.errors, console_log.errors
    page.context.close()


def test_an_editor_follows_a_private_session_with_the_editor_link(
    live_server: str, browser: Browser, console_log: ConsoleLog
) -> None:
    """A private session opens to its editors: the editor page's lines, term list and title
    come with the editor token, with no passcode asked."""
    session = create_session(live_server, title="private editing", listener_passcode="tulip 42")
    code, token = session["code"], session["presenter_token"]
    auth = {"Authorization": f"Bearer {token}"}
    pcm, rate = read_wav(ENGLISH)
    with ThreadPoolExecutor(1) as thread:
        streaming = stream_recording(live_server, pcm, rate, speed=4.0, session=session)
        thread.submit(asyncio.run, streaming).result(timeout=120)
    terms = httpx.put(
        f"{live_server}/api/sessions/{code}/terms", json={"terms": ["Quilter"]}, headers=auth
    )
    assert terms.status_code == 200
    assert httpx.get(f"{live_server}/api/sessions/{code}/terms").status_code == 401
    editor = httpx.post(f"{live_server}/api/sessions/{code}/editors", headers=auth).json()

    page = open_page(browser, console_log, **LAPTOP)
    page.goto(f"{live_server}{editor['edit_url']}")
    expect(page.locator(".edit-line").first).to_be_visible(timeout=20_000)
    expect(page.locator(".edit-terms")).to_have_value("Quilter", timeout=10_000)
    # The title is not in the page for anyone with the code; the editor's token brings it.
    page_html = httpx.get(f"{live_server}/e/{code}").text
    assert "private editing" not in page_html and "Private session" in page_html
    expect(page.locator(".session-title")).to_have_text("private editing", timeout=10_000)
    assert page.locator(".edit-panel").get_attribute("data-connection") == "open"
    assert not console_log.errors, console_log.errors
    page.context.close()


def test_the_presenter_revokes_editor_links_and_an_editors_next_fix_is_refused(
    live_server: str, browser: Browser, console_log: ConsoleLog
) -> None:
    """A link that went astray: the console's "Revoke editor links" (after a confirm) stops
    every editor link given so far. The open editor page's next fix is refused, says why and
    shows the line as it was; nothing it sent changes the transcript."""
    session = create_session(live_server, title="revoking")
    code, token = session["code"], session["presenter_token"]
    pcm, rate = read_wav(ENGLISH)
    with ThreadPoolExecutor(1) as thread:
        streaming = stream_recording(live_server, pcm, rate, speed=4.0, session=session)
        thread.submit(asyncio.run, streaming).result(timeout=120)
    editor = httpx.post(
        f"{live_server}/api/sessions/{code}/editors",
        headers={"Authorization": f"Bearer {token}"},
    ).json()
    transcript = f"{live_server}/api/sessions/{code}/transcript"
    before = httpx.get(transcript).text

    page = open_page(browser, console_log, **LAPTOP)
    page.goto(f"{live_server}{editor['edit_url']}")
    first = page.locator(".edit-line").first
    expect(first).to_be_visible(timeout=20_000)
    original = first.inner_text()

    console = open_page(browser, console_log, **LAPTOP)
    console.goto(f"{live_server}/p/{code}#token={token}")
    revoke = console.locator("#revoke-editor-links")
    expect(revoke).to_be_enabled()
    dialogs: list[str] = []

    def accept(dialog: Dialog) -> None:
        dialogs.append(dialog.message)
        dialog.accept()

    console.once("dialog", accept)
    revoke.click()
    expect(console.locator("#editor-links-status")).to_have_text(
        "The editor link given so far no longer works. Make new ones for the editors you trust.",
        timeout=10_000,
    )
    assert dialogs and "Revoke every editor link" in dialogs[0]

    page.locator(".edit-lines").focus()
    page.keyboard.press("Home")
    page.keyboard.press("Enter")
    page.keyboard.press("Control+a")
    page.keyboard.type("A fix from a revoked link")
    page.keyboard.press("Enter")
    status = page.locator(".edit-status")
    expect(status).to_contain_text("was revoked", timeout=10_000)
    expect(status).to_have_attribute("data-error", "true")
    expect(first).to_have_text(original)
    assert first.get_attribute("data-rev") == "0"
    assert httpx.get(transcript).text == before
    # The browser reports the refused request (403) on the editor's console; nothing else.
    assert all("403" in line for line in console_log.errors), console_log.errors
    for opened in (page, console):
        opened.context.close()
