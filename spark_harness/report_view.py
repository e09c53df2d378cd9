"""A fuzz report's pages: `rmqspec view REPORT_DIR`, and what `rmqspec fuzz` writes
itself (docs/view.md).

For every counterexample trace named in report.json, the interactive page of
histories.view next to it (`counterexamples/<name>.html`, linking back), and one static
index (`index.html`, no script at all, every string escaped): a row per violated
property with its verdict, statement, known cause, a link that opens the page at the
violating step, the trace, its timeline picture and the replay command. report.md
links the index.
"""

from __future__ import annotations

import html
import json
import os
from typing import Any
from urllib.parse import quote

from histories import files, shell, view
from spark_harness import report as report_mod

_INDEX_CSP = "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'"  # no script at all
_INDEX_CSS = """
body{font:14px/1.45 system-ui,-apple-system,'Segoe UI',sans-serif;margin:24px auto;max-width:1200px;padding:0 16px;
color:#1d232a}
h1{font-size:20px;margin:0 0 4px}.sub{color:#5b6470;margin-bottom:16px}
table{border-collapse:collapse;width:100%}th,td{border-bottom:1px solid #dde1e6;padding:6px 8px;text-align:left;
vertical-align:top}th{background:#f3f5f7;font-weight:600}
code{font:12px ui-monospace,SFMono-Regular,Menlo,monospace;background:#f3f5f7;padding:1px 4px;border-radius:3px;
word-break:break-all}
.unexpected{color:#fff;background:#c0392b;padding:1px 6px;border-radius:3px;font-weight:600}
.expected{color:#7a5300;background:#fbe7b5;padding:1px 6px;border-radius:3px}
.err{color:#c0392b}.small{font-size:12px;color:#5b6470}
"""


def render_index(report: dict, entries: list[dict], title: str) -> str:
    """A static page (no script) linking every counterexample's page. `entries`: one
    per violation: key, protocol, property, statement, unexpected, cause, histories,
    detail, replay, and page / trace / picture (relative paths) or error."""
    esc = html.escape

    def link(path: str | None, text: str, anchor: str | None = None) -> str:
        if not path:
            return ""
        return f'<a href="{esc(quote(path) + ("#" + quote(anchor, safe="=") if anchor else ""))}">{esc(text)}</a>'

    unexpected = [e["key"] for e in entries if e["unexpected"]]
    verdict = (f'<span class="unexpected">UNEXPECTED</span> violations of {esc(", ".join(unexpected))}'
               if unexpected else "no unexpected violation")
    rows = []
    for e in entries:
        tag = ('<span class="unexpected">UNEXPECTED</span>' if e["unexpected"]
               else '<span class="expected">expected</span>')
        cause = esc(e["cause"]) if e.get("cause") else ("" if e["unexpected"] else "(known cause)")
        page = link(e.get("page"), "step through", e.get("anchor")) if e.get("page") else (
            f'<span class="err">{esc(e["error"])}</span>' if e.get("error") else "no counterexample")
        extra = " · ".join(x for x in (link(e.get("trace"), "trace"), link(e.get("picture"), "timeline (png)")) if x)
        steps = f'<div class="small">{e["steps"]:,} steps, violated at step {esc(str(e.get("step")))}</div>' \
            if e.get("steps") is not None else ""
        rows.append(
            f"<tr><td><b>{esc(e['key'])}</b><div class=small>{esc(e['protocol'])}</div></td><td>{tag}</td>"
            f"<td>{esc(e.get('statement') or '')}<div class=small>{esc(e.get('detail') or '')}</div></td>"
            f"<td>{cause}</td><td>{e['histories']:,}</td><td>{page}{steps}<div class=small>{extra}</div></td>"
            f"<td><code>{esc(e.get('replay') or '')}</code></td></tr>")
    body = ("\n".join(rows) if rows else '<tr><td colspan="7">No property was violated.</td></tr>')
    protos = ", ".join(report.get("protocols") or [str(report.get("protocol", ""))])
    seeds = report.get("seeds") or ["?", "?"]
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="{_INDEX_CSP}">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{esc(title)}</title><style>{_INDEX_CSS}</style></head>
<body>
<h1>{esc(title)}</h1>
<div class="sub">{esc(protos)}: {report.get('histories', 0):,} histories, {report.get('steps', 0):,} events, seeds
{esc(str(seeds[0]))}..{esc(str(seeds[-1]))}. Verdict: {verdict}. {link('report.md', 'report.md')}</div>
<table><thead><tr><th>property</th><th>verdict</th><th>statement / shortest failing history</th><th>known cause</th>
<th>histories</th><th>counterexample</th><th>replay</th></tr></thead>
<tbody>
{body}
</tbody></table>
<p class="small">Pages written by <code>rmqspec view</code> (docs/view.md). Keys on a page: left/right step,
Home/End, n/p next/previous violation or fault.</p>
</body></html>
"""




def load_report(path: str) -> dict:
    rj = os.path.join(path, "report.json")
    if not os.path.isfile(rj):
        raise view.ViewError(f"{path} is a directory without report.json: not a fuzz report (rmqspec fuzz --out DIR)")
    try:
        with open(rj, encoding="utf-8") as f:
            report = json.load(f)
    except (OSError, ValueError) as e:
        raise view.ViewError(f"{rj}: not a readable fuzz report: {str(e).splitlines()[0] if str(e) else e}") from None
    if not isinstance(report, dict) or report.get("schema") != report_mod.SCHEMA:
        raise view.ViewError(f"{rj}: not a fuzz report (schema is not {report_mod.SCHEMA!r})")
    if not isinstance(report.get("violations"), dict):
        raise view.ViewError(f"{rj}: not a fuzz report (no 'violations' object)")
    return report


def _locate(report_dir: str, path: Any) -> str | None:
    """A counterexample file named in report.json: the report's own copy under its
    counterexamples/ first (the directory may have moved since it was written), else
    the path as written (relative to where fuzz ran), else relative to the report; in
    every case only a file that lies inside the report folder once symlinks are resolved.
    A report folder may come from someone else: a path in it is data, never a way out
    of the folder to read from or to write a page beside (docs/security.md)."""
    if not isinstance(path, str) or not path:
        return None
    for candidate in (os.path.join(report_dir, "counterexamples", os.path.basename(path)), path,
                      os.path.join(report_dir, path)):
        if os.path.isfile(candidate) and files.inside(report_dir, candidate):
            return candidate
    return None


def write(report_dir: str, path_out: str | None = None, replay: bool = True, report: dict | None = None) -> dict:
    """One page per counterexample, next to its trace, and the index (default
    DIR/index.html), from DIR/report.json or the `report` given (a fuzz run that has
    not written it yet). Returns a summary; raises view.ViewError (one line) on bad input."""
    report = report if report is not None else load_report(report_dir)
    index = path_out or os.path.join(report_dir, "index.html")
    index_dir = os.path.dirname(os.path.abspath(index))

    def rel(p: str) -> str:
        return os.path.relpath(os.path.abspath(p), index_dir).replace(os.sep, "/")

    entries, pages, errors = [], [], []
    for key, v in report["violations"].items():
        if not isinstance(v, dict):
            continue
        cex = v.get("counterexample") if isinstance(v.get("counterexample"), dict) else {}
        shortest = v.get("shortest") if isinstance(v.get("shortest"), dict) else {}
        unexpected = bool(v.get("unexpected"))
        entry = {"key": str(key), "protocol": str(v.get("protocol") or ""), "statement": v.get("statement"),
                 "unexpected": unexpected, "histories": v.get("histories") or 0,
                 "cause": cex.get("cause") or next(iter(v.get("causes") or {}), None),
                 "detail": cex.get("detail") or shortest.get("detail"), "replay": v.get("replay")}
        trace = _locate(report_dir, cex.get("trace") or v.get("trace"))
        if trace is None:
            if cex:
                entry["error"] = f"trace missing: {os.path.basename(str(cex.get('trace')))}"
                errors.append(entry["error"])
        else:
            out = view.default_out(trace)
            replay_cmd = shell.command("replay", trace)
            entry["replay"] = replay_cmd
            links = {"index": quote(os.path.relpath(os.path.abspath(index), os.path.dirname(os.path.abspath(out)))
                                    .replace(os.sep, "/")),
                     "index_title": "fuzz report index"}
            try:
                page = view.write_trace_view(trace, out, replay, links, replay_cmd)
            except view.ViewError as e:
                entry["error"] = str(e)
                errors.append(str(e))
            else:
                step = page["steps_of"].get(cex.get("property") or str(key).split("/")[-1])
                entry.update(page=rel(out), trace=rel(trace), steps=page["steps"], step=step,
                             anchor=f"step={step}" if isinstance(step, int) else None)
                pages.append({"property": str(key), "trace": trace, "out": out, "steps": page["steps"],
                              "violations": page["violations"]})
            picture = _locate(report_dir, cex.get("picture"))
            if picture:
                entry["picture"] = rel(picture)
        entries.append(entry)
    entries.sort(key=lambda e: (not e["unexpected"], e["key"]))
    title = f"rmqspec fuzz report: {', '.join(report.get('protocols') or [str(report.get('protocol'))])}"
    view.write_page(index, render_index(report, entries, title))
    return {"ok": True, "kind": "report", "out": index, "steps": sum(p["steps"] for p in pages),
            "pages": pages, "violations": [e["key"] for e in entries], "errors": errors}
