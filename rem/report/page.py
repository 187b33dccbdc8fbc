"""The report as one self-contained HTML page (reports/index.html), its links relative so the folder can move."""

from __future__ import annotations

import html
import os
import re
from pathlib import Path

from rem.report.render import Table, to_html

STYLE = """body{font-family:system-ui,sans-serif;max-width:1200px;margin:2em auto;padding:0 1em;color:#222}
table{border-collapse:collapse;margin:.5em 0}th,td{padding:.25em .6em;text-align:right}
th:nth-child(-n+2),td:nth-child(-n+2){text-align:left}thead{border-bottom:1px solid #444}
table{border-top:2px solid #444;border-bottom:2px solid #444}p.note{font-size:.85em;color:#555;max-width:70em}
figure{margin:1.5em 0}img{max-width:100%;border:1px solid #ddd}figcaption{font-size:.9em;color:#444}"""


def render_page(title: str, tables: list[tuple[str, Table]], figures: list, notes: list[str], out_dir: Path,
                downloads: list[Path], scope: str = "") -> str:
    """`tables`: (section, Table); `figures`: objects with section, path, caption; `downloads`: table files;
    `scope`: a line under the title on what the page leaves out and how its trials computed."""
    out_dir = Path(out_dir)

    def link(path: Path) -> str:
        return html.escape(Path(os.path.relpath(Path(path).resolve(), out_dir.resolve())).as_posix(), quote=True)

    parts = [f"<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{html.escape(title)}</title>"
             f"<style>{STYLE}</style></head><body>\n<h1>{html.escape(title)}</h1>"]
    if scope:
        parts.append(f"<p class=\"note\">{html.escape(scope)}</p>")
    if downloads:
        parts.append("<p>Tables as files: " + ", ".join(
            f"<a href=\"{link(p)}\">{html.escape(Path(p).name)}</a>" for p in downloads) + "</p>")
    section = None
    for name, table in tables:
        if name != section:
            parts.append(f"<h2>{html.escape(name)}</h2>")
            section = name
        parts.append(to_html(table))
    section = None
    for figure in figures:
        if figure.section != section:
            parts.append(f"<h2>{html.escape(figure.section)}</h2>")
            section = figure.section
        parts.append(f"<figure><img src=\"{link(figure.path)}\" alt=\"{html.escape(figure.caption, quote=True)}\">"
                     f"<figcaption>{html.escape(figure.caption)}</figcaption></figure>")
    if notes:
        parts.append("<h2>Figures not drawn</h2><ul>" + "".join(f"<li>{html.escape(n)}</li>" for n in notes) + "</ul>")
    parts.append("</body></html>\n")
    return "\n".join(parts)


def linked_files(page: str) -> list[str]:
    """Every src/href target of a page (what must exist beside it)."""
    return [html.unescape(m) for m in re.findall(r'(?:src|href)="([^"]+)"', page)]
