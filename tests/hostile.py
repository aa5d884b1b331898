"""Small hostile documents, generated: each is tiny on disk and expands without bound in a naive reader."""

from __future__ import annotations

import zlib
from pathlib import Path


def yaml_alias_bomb(levels: int = 9, width: int = 9) -> str:
    """Markdown whose YAML front matter nests aliases `levels` deep, `width` wide (about 500 bytes; width**levels
    leaves once expanded)."""
    lines = ['a0: &a0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for level in range(1, levels):
        refs = ",".join(f"*a{level - 1}" for _ in range(width))
        lines.append(f"a{level}: &a{level} [{refs}]")
    return "---\n" + "\n".join(lines) + "\n---\n\n# Title\n\nBody.\n"


def nested_html(size: int = 84_000) -> str:
    """HTML of `<div><p>` nested as deep as `size` bytes allow, never closed."""
    unit = "<div><p>x "
    return "<html><body>" + unit * (size // len(unit)) + "</body></html>"


def doubling_substitutions(levels: int = 24) -> str:
    """reST whose substitution |s0| expands to 2**levels copies of a word."""
    lines = ["Title", "=====", "", "Text |s0|.", ""]
    lines += [f".. |s{n}| replace:: |s{n + 1}| |s{n + 1}|" for n in range(levels)]
    lines.append(f".. |s{levels}| replace:: word")
    return "\n".join(lines) + "\n"


def shared_stream_pdf(path: Path, pages: int = 4, decoded_bytes: int = 20 * 2**20) -> Path:
    """A PDF whose `pages` pages all draw one flate-compressed content stream of `decoded_bytes` bytes of text
    operators (a few KB on disk)."""
    op = b"BT /F1 12 Tf 72 720 Td (" + b"lorem ipsum dolor sit amet " * 40 + b") Tj T* ET\n"
    content = zlib.compress(op * (decoded_bytes // len(op)), 9)
    kids = " ".join(f"{5 + i} 0 R" for i in range(pages))
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [" + kids.encode() + b"] /Count " + str(pages).encode() + b" >>",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
        b"<< /Length " + str(len(content)).encode() + b" /Filter /FlateDecode >>\nstream\n" + content + b"\nendstream",
    ]
    page = b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 3 0 R >> >> /Contents 4 0 R >>"
    objects += [page] * pages
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += f"{number} 0 obj\n".encode() + body + b"\nendobj\n"
    xref = len(out)
    out += f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode()
    out += b"".join(f"{o:010d} 00000 n \n".encode() for o in offsets)
    out += f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n".encode()
    path.write_bytes(bytes(out))
    return path
