"""One table, three renderings (Markdown, LaTeX with booktabs, HTML) of the same formatted cell strings."""

from __future__ import annotations

import html
from dataclasses import dataclass, field


@dataclass
class Table:
    title: str
    header: list[str]
    rows: list[list[str]]
    notes: list[str] = field(default_factory=list)  # printed under the table (seeds, epochs, rules, sources)
    align: str = ""  # LaTeX column spec; default: two left columns, the rest right-aligned

    def __post_init__(self):
        for row in self.rows:
            if len(row) != len(self.header):
                raise ValueError(f"table {self.title!r}: row {row} has {len(row)} cells for {len(self.header)} columns")


def to_markdown(table: Table, level: int = 2) -> str:
    def cell(text: str) -> str:
        return text.replace("|", r"\|")

    lines = [f"{'#' * level} {table.title}", "", "| " + " | ".join(map(cell, table.header)) + " |",
             "|" + "---|" * len(table.header)]
    lines += ["| " + " | ".join(map(cell, row)) + " |" for row in table.rows]
    for note in table.notes:
        lines += ["", note]
    return "\n".join(lines) + "\n"


def latex_escape(text: str) -> str:
    out = text.replace("\\", r"\textbackslash{}")
    for char in "_%&#$":
        out = out.replace(char, "\\" + char)
    return out.replace("±", r"$\pm$").replace("≥", r"$\geq$").replace("†", r"$^\dagger$")


def to_latex(table: Table) -> str:
    align = table.align or "ll" + "r" * (len(table.header) - 2)
    caption = latex_escape(table.title + (". " + " ".join(table.notes) if table.notes else ""))
    body = [" & ".join(latex_escape(c) for c in row) + r" \\" for row in table.rows]
    return "\n".join([
        r"\begin{table}[t]", r"\centering", rf"\caption{{{caption}}}", rf"\begin{{tabular}}{{{align}}}", r"\toprule",
        " & ".join(latex_escape(h) for h in table.header) + r" \\", r"\midrule",
        *body, r"\bottomrule", r"\end{tabular}", r"\end{table}", "",
    ])


def to_html(table: Table) -> str:
    esc = html.escape
    head = "".join(f"<th>{esc(h)}</th>" for h in table.header)
    body = "\n".join("<tr>" + "".join(f"<td>{esc(c)}</td>" for c in row) + "</tr>" for row in table.rows)
    notes = "".join(f"<p class=\"note\">{esc(n)}</p>" for n in table.notes)
    return (f"<h3>{esc(table.title)}</h3>\n<table>\n<thead><tr>{head}</tr></thead>\n<tbody>\n{body}\n</tbody>\n"
            f"</table>\n{notes}\n")
