"""PDF (made here with fpdf2) and HTML ingest: structure becomes the heading path; metadata comes
from the CLI options, the vendor inferred from the accelerators' facts."""

from __future__ import annotations

from pathlib import Path

from fpdf import FPDF

from ingest.html import html_blocks
from ingest.pipeline import IngestOptions, ingest_paths
from kb_server.schemas import SearchFilters


def make_pdf(path: Path) -> None:
    pdf = FPDF()
    pdf.set_title("Tensor core field guide")
    pdf.set_font("helvetica", size=12)
    pdf.add_page()
    pdf.multi_cell(0, 8, "Page one explains warpgroups. The flurbmma instruction multiplies tiles.")
    pdf.add_page()
    pdf.multi_cell(0, 8, "Page two covers the asynchronous copy engine named snarfcopy and its barriers.")
    pdf.output(str(path))


def test_pdf_ingest_keeps_pages_as_heading_path(tmp_path, store):
    make_pdf(tmp_path / "guide.pdf")
    report = ingest_paths(store, [tmp_path / "guide.pdf"], IngestOptions(accelerator=("h100",)))
    assert len(report.written) == 1 and report.skipped == []
    hit = store.search("snarfcopy", k=1, mode="lexical")[0]
    assert hit.chunk.heading_path == ["Tensor core field guide", "Page 2"]
    assert "snarfcopy" in hit.chunk.text
    assert hit.chunk.accelerator == ["h100"]
    facts = store.accelerators()
    assert hit.chunk.vendor == (facts["h100"].vendor if "h100" in facts else "any")  # inferred from facts
    assert store.search("flurbmma", k=1, mode="lexical")[0].chunk.heading_path[-1] == "Page 1"


HTML = """<html><head><title>MI300X notes</title><script>var tracking = "zzzscript";</script></head>
<body><h1>MI300X</h1><p>Intro paragraph.</p>
<h2>LDS</h2><p>The LDS holds 64 KB per CU.</p>
<pre>v_mfma_f32_32x32x8 a, b, c
s_waitcnt lgkmcnt(0)</pre>
<h3>Banks</h3><table><tr><th>banks</th><th>width</th></tr><tr><td>32</td><td>4 B</td></tr></table>
<h2>Wavefronts</h2><ul><li>64 lanes per wavefront</li></ul></body></html>"""


def test_html_sections_become_the_heading_path():
    title, blocks = html_blocks(HTML, Path("mi300x.html"))
    assert title == "MI300X notes"
    by_text = {b.text: b for b in blocks}
    assert by_text["The LDS holds 64 KB per CU."].heading_path == ("MI300X", "LDS")
    pre = next(b for b in blocks if "v_mfma" in b.text)
    assert pre.atomic and "s_waitcnt" in pre.text  # the code block is one atomic block
    table = next(b for b in blocks if "banks" in b.text)
    assert table.atomic and table.heading_path == ("MI300X", "LDS", "Banks") and "32 | 4 B" in table.text
    assert by_text["64 lanes per wavefront"].heading_path == ("MI300X", "Wavefronts")
    assert not any("zzzscript" in b.text for b in blocks)  # scripts dropped


def test_html_ingest_and_filters(tmp_path, store):
    (tmp_path / "mi300x.html").write_text(HTML)
    ingest_paths(store, [tmp_path], IngestOptions(accelerator=("mi300x",), vendor="amd", kind="isa"))
    hits = store.search("v_mfma_f32_32x32x8", k=2, filters=SearchFilters(accelerator="mi300x", kind="isa"))
    assert "v_mfma_f32_32x32x8" in hits[0].chunk.text and hits[0].chunk.vendor == "amd"
    assert store.search("v_mfma_f32_32x32x8", k=2, filters=SearchFilters(accelerator="h100")) == []
