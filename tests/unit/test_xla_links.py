"""Links in HLO drawings: hostile dumps lose every non-relative link, ordinary ones keep theirs."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from tfprof_lite import xla
from tfprof_lite.cli import main
from tfprof_lite.xla import links
from tfprof_lite.xla.dot import attr_text, parse_dot

needs_dot = pytest.mark.skipif(
    shutil.which("dot") is None,
    reason="Graphviz's dot program is missing",
)
DUMP = "module_0001.cluster_1__X_.2.cpu_after_optimizations.dot"

#: Every Graphviz link attribute, each with a different way of hiding a script.
HOSTILE = """digraph G {
URL="javascript:alert(1)";
stylesheet="javascript:alert(2)";
node [href="JaVaScRiPt:alert(3)", target="javascript:x"];
edge [edgeURL="data:text/html,<script>alert(4)</script>"];
subgraph cluster_9 { URL="vbscript:msgbox(1)"; label="c"; 5 [label="five"]; }
1 [label=<<b>Parameter 0</b><br/>f32[4]>, URL=" java\tscript:alert(5)", tooltip="t"];
2 [label=<<TABLE HREF="vbscript:msgbox" TARGET="javascript:y"><TR>\
<TD HREF="&#106;avascript:alert(6)">dot.1</TD><TD HREF="#ok">x</TD>\
<TD><IMG SRC="/etc/hostname"/></TD></TR></TABLE>>,
   headURL="//evil.example/x", tailURL="https://evil.example",
   labelURL="&#x6A;avascript&colon;alert(7)", image="/etc/hostname", shapefile="/etc/x"];
3 [label=<<b>ok.1</b>>, URL="docs/page.html#sec", target="_top"];
4 [label=<<b>t.4</b>>, href="\\N", tailhref="java&#0;script:alert(8)", headhref="/abs/path",
   labelhref="file:///etc/passwd", edgehref="DATA:text/html;base64,PHNjcmlwdD4="];
1 -> 2 [tooltip="arg0.1 -> dot.1", URL="javascript:alert(9)", headtarget="_self"];
2 -> 3 [labelhref="#edge", edgeURL="relative.html", labeltarget="_blank"];
3 -> 4 [URL="&#14;javascript:alert(10)", tailURL="jav&#x09;ascript:alert(11)"];
4 -> 5 [href="%6Aavascript:alert(12)"];
}
"""

#: An ordinary dump whose links are all relative or anchors.
ORDINARY = """digraph G {
1 [label=<<b>a.1</b>>, URL="a.html", target="_blank"];
2 [label=<<TABLE><TR><TD HREF="#a.1">b.2</TD></TR></TABLE>>, href="#node1"];
1 -> 2 [tooltip="a.1 -> b.2", URL="docs/edge.html#x", headURL="#head"];
}
"""

_URL_VALUE = re.compile(r"""(?:href|url|src)\s*=\s*("[^"]*"|'[^']*')""", re.I)


@pytest.mark.parametrize(
    "link",
    [
        "javascript:alert(1)",
        "JAVASCRIPT:alert(1)",
        " javascript:alert(1)",
        "java\tscript:alert(1)",
        "java\nscript:alert(1)",
        "java\x00script:alert(1)",
        "\x01javascript:alert(1)",
        "java\u200bscript:alert(1)",
        "&#106;avascript:alert(1)",
        "&#x6A;avascript:alert(1)",
        "&#106avascript:alert(1)",
        "javascript&colon;alert(1)",
        "&amp;#106;avascript:alert(1)",
        "data:text/html,<script>",
        "vbscript:msgbox",
        "https://example.com",
        "http:example.com",
        "//example.com/x",
        "/etc/passwd",
        "\\\\example.com\\x",
        "\\N",
        "file:///etc/passwd",
        "",
        " ",
    ],
)
def test_unsafe_links_are_refused(link: str) -> None:
    assert not links.is_safe_link(link)


@pytest.mark.parametrize(
    "link", ["#anchor", "#", "a.html", "docs/page.html#sec", "../up.svg", "x?y=1:2", "a%3Ab"]
)
def test_relative_links_and_anchors_are_kept(link: str) -> None:
    assert links.is_safe_link(link)


def _all_links(dot_text: str) -> list[str]:
    """Every link-like value left in DOT text (attributes and HTML-label attributes)."""
    graph = parse_dot(dot_text)
    values = []
    for attrs in links._attr_dicts(graph):
        for key, raw in attrs.items():
            if key.lower() in links.LINK_ATTRIBUTES or key.lower() == "stylesheet":
                values.append(attr_text(raw))
            values += [m[1][1:-1] for m in _URL_VALUE.finditer(raw) if raw.startswith("<")]
    return values


def test_prepare_dot_drops_every_unsafe_link(tmp_path: Path) -> None:
    (tmp_path / DUMP).write_text(HOSTILE, encoding="utf-8")
    text = xla.prepare_dot(tmp_path / DUMP, collapse_fusions=False, strip_styles=False)
    kept = _all_links(text)
    assert sorted(kept) == ["#edge", "#ok", "docs/page.html#sec", "relative.html"]
    assert "javascript" not in text.lower() and "script:" not in text.lower()
    for gone in ("vbscript", "evil.example", "/etc/", "shapefile", "image=", "stylesheet"):
        assert gone not in text
    graph = parse_dot(text)
    assert attr_text(graph.nodes["3"]["target"]) == "_top"
    assert "target" not in dict(graph.subgraphs[""].defaults)["node"]
    assert 'TARGET="javascript' not in text and "<IMG" not in text


def test_ordinary_dump_keeps_its_links(tmp_path: Path) -> None:
    (tmp_path / DUMP).write_text(ORDINARY, encoding="utf-8")
    text = xla.prepare_dot(tmp_path / DUMP, collapse_fusions=False, strip_styles=False)
    assert sorted(_all_links(text)) == sorted(
        ["a.html", "#a.1", "#node1", "docs/edge.html#x", "#head"]
    )
    assert 'target="_blank"' in text


def test_xla_stylesheet_keeps_its_rules_without_imports() -> None:
    css = (
        "\n  data:text/css,\n  @import url(https://fonts.googleapis.com/css?family=Roboto);\n"
        "  svg text { font-size: 12px; }\n  %23node2:hover ~ %23edge1 text { fill: %231976d2; }\n"
    )
    cleaned = links.clean_stylesheet(css)
    assert cleaned is not None
    assert "@import" not in cleaned and "googleapis" not in cleaned
    assert "%23node2:hover" in cleaned and "font-size" in cleaned
    for hostile in (
        "data:text/css,a{background:url(//evil.example/x)}",
        "data:text/css,a{background:u%72l(//evil.example/x)}",
        "data:text/css,a{b:\\75 rl(x)}",
        "data:text/html,<script>alert(1)</script>",
        "javascript:alert(1)",
    ):
        assert links.clean_stylesheet(hostile) is None, hostile


def test_check_drawing_refuses_unsafe_links() -> None:
    links.check_drawing(b'<svg><a xlink:href="#x"><text>a</text></a></svg>', "ok.svg")
    with pytest.raises(xla.RenderError, match="bad.svg: the drawing links to 'javascript:"):
        links.check_drawing(b'<svg><a xlink:href="java&#10;script:x"/></svg>', "bad.svg")
    with pytest.raises(xla.RenderError, match="not a relative link"):
        links.check_drawing(b"<svg><image href='https://example.com/x.png'/></svg>", "b.svg")
    with pytest.raises(xla.RenderError, match="unsafe stylesheet"):
        links.check_drawing(
            b'<?xml-stylesheet href="data:text/css,@import url(x);" type="text/css"?><svg/>',
            "c.svg",
        )


def _svg_links(svg: str) -> list[str]:
    return re.findall(r"""\s(?:xlink:)?href="([^"]*)\"""", svg)


@needs_dot
def test_real_dot_svg_of_a_hostile_dump_has_no_script(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / DUMP).write_text(HOSTILE, encoding="utf-8")
    for styles in ((), ("--keep-styles",)):
        out = tmp_path / f"hostile{len(styles)}.svg"
        code = main(["hlo", str(tmp_path), "-m", "1", "--expand-fusions", *styles, "-o", str(out)])
        assert code == 0, capsys.readouterr().err
        svg = out.read_text(encoding="utf-8")
        assert "<svg" in svg and "dot.1" in svg
        assert "javascript:" not in svg.lower() and "vbscript" not in svg.lower()
        assert not re.search(r"""href="[A-Za-z][A-Za-z0-9+.-]*:|href="/""", svg), svg
        found = set(_svg_links(svg))
        assert {"#ok", "docs/page.html#sec", "relative.html"} <= found  # the safe ones survive
        assert found <= {"#edge", "#ok", "docs/page.html#sec", "relative.html"}
    dot_out = tmp_path / "hostile.dot"
    assert main(["hlo", str(tmp_path), "-m", "1", "--format", "dot", "-o", str(dot_out)]) == 0
    assert "javascript" not in dot_out.read_text(encoding="utf-8").lower()


@needs_dot
def test_real_dot_svg_of_an_ordinary_dump_keeps_links(tmp_path: Path) -> None:
    (tmp_path / DUMP).write_text(ORDINARY, encoding="utf-8")
    (svg,) = xla.render(tmp_path / DUMP, tmp_path / "out", ("svg",))
    links_found = set(_svg_links(svg.read_text(encoding="utf-8")))
    assert {"a.html", "#a.1", "#node1", "docs/edge.html#x"} <= links_found
