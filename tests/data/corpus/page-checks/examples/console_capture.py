"""Collect the browser console while clicking through a flow."""

from playwright.sync_api import sync_playwright

messages = []
with sync_playwright() as p:
    browser = p.chromium.launch(headless=True)
    page = browser.new_page()
    page.on("console", lambda msg: messages.append(f"{msg.type}: {msg.text}"))
    page.goto("http://localhost:5173")
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_load_state("networkidle")
    browser.close()
print("\n".join(messages))
