"""The console's files (console/, decision 0137) keep to what the strict Content-Security-Policy and text-only
rendering need: no HTML sinks or string-to-code in the script, no inline script, style or event handler in the page,
and the two asset names the hosting build rewrites to content-hashed ones."""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path

CONSOLE = Path(__file__).resolve().parents[2] / "console"
SINKS = ["innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "new Function", 'setAttribute("on']


class _Page(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.script_text = ""
        self._in_script = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))
        self._in_script = tag == "script"

    def handle_endtag(self, tag: str) -> None:
        self._in_script = False

    def handle_data(self, data: str) -> None:
        if self._in_script:
            self.script_text += data


def _code_lines(source: str) -> str:
    """The script without its // comments (which name the sinks it avoids)."""
    return "\n".join(line for line in source.splitlines() if not line.lstrip().startswith("//"))


def test_the_script_has_no_html_sink_and_no_string_to_code():
    code = _code_lines((CONSOLE / "app.js").read_text())
    assert [sink for sink in SINKS if sink in code] == []
    assert not re.search(r"setTimeout\(\s*[\"'`]", code)  # a string timer is eval
    assert "import " not in code and "export " not in code  # one plain script, no modules


def test_the_page_has_no_inline_script_style_or_handler_and_names_its_two_assets():
    page = _Page()
    page.feed((CONSOLE / "index.html").read_text())
    assert page.script_text.strip() == ""
    assert [tag for tag, _ in page.tags if tag == "style"] == []
    assert [(tag, name) for tag, attrs in page.tags for name in attrs if name == "style" or name.startswith("on")] == []
    scripts = [attrs for tag, attrs in page.tags if tag == "script"]
    sheets = [attrs for tag, attrs in page.tags if tag == "link" and attrs.get("rel") == "stylesheet"]
    assert [s.get("src") for s in scripts] == ["app.js"] and "defer" in scripts[0]
    assert [s.get("href") for s in sheets] == ["style.css"]
