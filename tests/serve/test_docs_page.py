"""/docs styles only its own status line and key dialog: Swagger UI keeps its button, input and schema styles."""

import re

from rag.serve.demo import STATIC_DIR

OWN_ELEMENTS = ("#docs-status", "#key-dialog", "#key-input", "#key-submit", "#key-error", "body.docs", ":root")


def test_docs_page_leaves_swagger_ui_styles_alone():
    html = (STATIC_DIR / "docs.html").read_text()
    sheets = re.findall(r'<link rel="stylesheet" href="/static/([^"]+)"', html)
    assert sheets[0] == "vendor/swagger-ui/swagger-ui.css" and "style.css" not in sheets, sheets
    for sheet in sheets[1:]:
        css = re.sub(r"/\*.*?\*/", "", (STATIC_DIR / sheet).read_text(), flags=re.S)
        selectors = [s.strip() for block in re.findall(r"([^{}]+)\{", css) for s in block.split(",")]
        assert selectors and all(s.startswith(OWN_ELEMENTS) for s in selectors), (sheet, selectors)
