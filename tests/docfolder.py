"""A generated test folder of mixed documents (nothing binary is committed): markdown with front matter, code and
HTML, an HTML page, a PDF made by hand, reStructuredText, text, and the bad files each loader must refuse."""

from __future__ import annotations

import io
from pathlib import Path

MARKDOWN = """---
title: Widget Guide
tags: [install, usage]
---
<p align="center"><img src="logo.png" alt="logo"> <a href="https://example.org">badge</a></p>

# Widgets

Widgets turn sprockets into gears.

## Install

Run `pip install widget[http2]` to get the optional HTTP/2 support.

```bash
# this comment is not a heading
pip install widget[http2]
```

## Usage

<details><summary>More</summary>Hidden <b>details</b> text.</details>

Call the `spin()` function with a speed in rpm.
"""

HTML = """<!doctype html><html><head><title>Gear Handbook</title><script>var tracking = "nope";</script>
<style>body { color: red }</style></head><body>
<nav><a href="/">Home</a> | <a href="/about">About navigation menu</a></nav>
<main><h1>Gears</h1><p>A gear has teeth that mesh with another gear.</p>
<h2>Ratios</h2><p>The gear ratio is the number of teeth on the driven gear divided by the driver's.</p>
<pre>ratio = driven / driver</pre></main>
<footer>Copyright footer text</footer></body></html>
"""

RST = """Sprocket Manual
===============

Sprockets carry chains between shafts.

Maintenance
-----------

Oil the sprocket chain every month.

.. code-block:: python

   oil(chain)
"""

TEXT = "Plain text notes about flywheels.\n\nA flywheel stores rotational energy."


def pdf_bytes(pages: list[str]) -> bytes:
    """A minimal valid PDF with one line of Helvetica text per page (offsets in the xref table computed)."""
    objects = ["<< /Type /Catalog /Pages 2 0 R >>", None, "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>"]
    kids = []
    for text in pages:
        stream = f"BT /F1 12 Tf 72 720 Td ({text}) Tj ET".encode()
        objects.append(f"<< /Length {len(stream)} >>\nstream\n{stream.decode()}\nendstream")
        content = len(objects)
        objects.append(
            f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents {content} 0 R "
            "/Resources << /Font << /F1 3 0 R >> >> >>"
        )
        kids.append(f"{len(objects)} 0 R")
    objects[1] = f"<< /Type /Pages /Kids [{' '.join(kids)}] /Count {len(kids)} >>"
    out, offsets = io.BytesIO(), []
    out.write(b"%PDF-1.4\n")
    for n, body in enumerate(objects, 1):
        offsets.append(out.tell())
        out.write(f"{n} 0 obj\n{body}\nendobj\n".encode())
    xref = out.tell()
    out.write(f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode())
    for off in offsets:
        out.write(f"{off:010d} 00000 n \n".encode())
    out.write(f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n".encode())
    return out.getvalue()


def encrypted_pdf(plain: bytes) -> bytes:
    from pypdf import PdfReader, PdfWriter

    writer = PdfWriter(clone_from=PdfReader(io.BytesIO(plain)))
    writer.encrypt("secret")
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def make_folder(root: Path, outside: Path, big: bool = True) -> Path:
    """The mixed folder; `outside` is a folder beside it that a symlink leads to."""
    (root / "guides").mkdir(parents=True)
    (root / "guides" / "widget.md").write_text(MARKDOWN)
    (root / "gears.html").write_text(HTML)
    (root / "sprocket.rst").write_text(RST)
    (root / "notes.txt").write_text(TEXT)
    plain = pdf_bytes(["Pulleys lift loads with ropes.", "A block and tackle multiplies force."])
    (root / "pulleys.pdf").write_bytes(plain)
    (root / "secret.pdf").write_bytes(encrypted_pdf(plain))
    (root / "broken.pdf").write_bytes(b"%PDF-1.4\n1 0 obj\n<< /Type /Catalog /Pages 9 0 R\nthis is not a pdf\n")
    (root / "image.txt").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)))
    (root / "data.json").write_text('{"not": "indexed"}')
    (root / "more.json").write_text("[]")
    (root / "photo.png").write_bytes(b"\x89PNG")
    outside.mkdir(parents=True, exist_ok=True)
    (outside / "private.md").write_text("# Private\n\nThis must never be indexed.")
    (root / "escape.md").symlink_to(outside / "private.md")
    if big:
        with open(root / "huge.txt", "wb") as f:  # 50 MB of real text
            line = b"the same log line again and again " * 30 + b"\n"
            for _ in range(50 * 2**20 // len(line) + 1):
                f.write(line)
    return root
