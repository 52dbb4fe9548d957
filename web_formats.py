"""HTML and EPUB to markdown: the main content, without scripts, styles, menus and page furniture.

BeautifulSoup finds the main content (<main>, role="main", <article>, else <body>) and
drops what is not content: scripts, styles, forms, and, around the main content,
navigation, headers, footers and sidebars, and, everywhere, comments and the permalink
anchors beside headings ("¶", text_formats.is_permalink). markdownify turns the rest into markdown with
`#` headings, lists and tables, so the splitter cuts it by headings and each chunk keeps
its heading path. Links keep their text, not their address, and emphasis (em, strong, i, b) its
text without `*` marks: those marks carry nothing a question asks about, and around text that
holds literal asterisks they garbled it ("<em>*ffi_closure_alloc (void **code)</em>", a C
signature in libffi's manual, became "**ffi_closure_alloc (void **code)*", which the quotes then
showed as "ffi_closure_alloc (void code)"). An EPUB is a zip of such
pages: each chapter in reading order (the spine of its package file) becomes a section
whose heading path carries on from the chapters before it.
"""

from __future__ import annotations

import posixpath
import re
import zipfile
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from doc_types import ConvertedDocument, Section
from errors import ConversionError
from text_formats import check_zip_size, decode_text, is_permalink, read_text_file

NEVER_CONTENT = ["script", "style", "noscript", "template", "iframe", "svg", "canvas", "form", "button", "select", "object", "embed"]
PAGE_FURNITURE = ["nav", "aside", "header", "footer", "menu"]
FURNITURE_ROLES = {"navigation", "banner", "contentinfo", "complementary", "search", "menu", "menubar"}
EMPHASIS = ["em", "strong", "i", "b"]
FURNITURE_CLASSES = {"nav", "navbar", "navigation", "menu", "sidebar", "breadcrumb", "breadcrumbs", "footer", "header", "toc", "cookie", "cookies", "skip-link"}


def convert_html_to_markdown(path: Path, source: str) -> ConvertedDocument:
    text, encoding, notes = read_text_file(path)
    markdown, title = html_to_markdown(text)
    if not markdown:
        raise ConversionError("the page has no text content")
    return ConvertedDocument(
        source=source, title=title or path.stem, kind="html", sections=[Section(text=markdown)], encoding=encoding, notes=notes
    )


def html_to_markdown(html: str) -> tuple[str, str]:
    """(markdown of the main content, the page title)."""
    from markdownify import MarkdownConverter

    soup = _soup(html)
    title = " ".join(soup.title.get_text().split()) if soup.title else ""
    for tag in soup(NEVER_CONTENT):
        tag.decompose()
    _drop_comments_and_permalinks(soup)
    main = _main_content(soup)
    furniture = ["nav", "aside", "menu"] if main.name in ("main", "article") else PAGE_FURNITURE
    for tag in main.find_all(furniture):
        tag.decompose()
    for tag in main.find_all(_is_furniture):
        tag.decompose()
    converter = MarkdownConverter(
        heading_style="ATX", bullets="-", strip=["a", "img", *EMPHASIS], escape_underscores=False, escape_asterisks=False, escape_misc=False,
    )
    markdown = converter.convert_soup(main)
    markdown = re.sub(r"[ \t]+\n", "\n", markdown)
    markdown = re.sub(r"\n{3,}", "\n\n", markdown).strip()
    if not title:
        match = re.search(r"(?m)^#\s+(.+)$", markdown)
        title = match.group(1).strip() if match else ""
    return markdown, title


def _drop_comments_and_permalinks(soup: Any) -> None:
    """HTML comments and the "¶" anchors Sphinx puts after each heading: neither is the page's text."""
    from bs4 import Comment

    for comment in soup.find_all(string=lambda node: isinstance(node, Comment)):
        comment.extract()
    for anchor in soup.find_all("a", href=True):
        if is_permalink(str(anchor["href"]), anchor.get_text(), anchor.get("class") or (), str(anchor.get("title") or "")):
            anchor.decompose()


def _soup(markup: str | bytes) -> Any:
    """Parsed with the standard library's parser: XHTML chapters and EPUB package files parse fine with it."""
    import warnings

    from bs4 import BeautifulSoup, XMLParsedAsHTMLWarning

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", XMLParsedAsHTMLWarning)
        return BeautifulSoup(markup, "html.parser")


def _main_content(soup: Any) -> Any:
    for found in (soup.find("main"), soup.find(attrs={"role": "main"})):
        if found is not None and found.get_text(strip=True):
            return found
    articles = [a for a in soup.find_all("article") if a.get_text(strip=True)]
    if len(articles) == 1:
        return articles[0]
    return soup.body or soup


def _is_furniture(tag: Any) -> bool:
    if tag.name in ("main", "article", "body", "html"):
        return False
    attrs = getattr(tag, "attrs", None) or {}
    if str(attrs.get("role", "")).lower() in FURNITURE_ROLES:
        return True
    words = {w.lower() for w in (attrs.get("class") or [])} | {str(attrs.get("id", "")).lower()}
    return bool(words & FURNITURE_CLASSES)


def convert_epub_to_markdown(path: Path, source: str) -> ConvertedDocument:
    check_zip_size(path)
    try:
        with zipfile.ZipFile(path) as book:
            names = set(book.namelist())
            if "META-INF/encryption.xml" in names and b"EncryptedData" in book.read("META-INF/encryption.xml"):
                raise ConversionError("encrypted EPUB (DRM): its chapters cannot be read without the key")
            container = book.read("META-INF/container.xml").decode("utf-8", errors="replace")
            match = re.search(r'full-path="([^"]+)"', container)
            if match is None:
                raise ConversionError("not a valid EPUB: META-INF/container.xml names no package file")
            package = _soup(book.read(match.group(1)))
            base = posixpath.dirname(match.group(1))
            hrefs = {item.get("id"): item.get("href") for item in package.find_all("item")}
            spine = [hrefs[ref.get("idref")] for ref in package.find_all("itemref") if hrefs.get(ref.get("idref"))]
            chapters = []
            for href in spine:
                name = posixpath.normpath(posixpath.join(base, unquote(href)))
                if name in names:
                    markdown, _ = html_to_markdown(decode_text(book.read(name))[0])
                    if markdown:
                        chapters.append(markdown)
    except KeyError as exc:
        raise ConversionError(f"not a valid EPUB: {exc.args[0] if exc.args else exc} is missing; re-save the book") from exc
    except zipfile.BadZipFile as exc:
        raise ConversionError(f"not a valid EPUB ({exc}); is the file complete?") from exc
    if not chapters:
        raise ConversionError("the book has no text")
    title_tag = package.find("dc:title")
    title = " ".join(title_tag.get_text().split()) if title_tag else ""
    sections = [Section(text=text, heading_path=p, heading_levels=levels) for text, (p, levels) in zip(chapters, _paths_before(chapters), strict=True)]
    return ConvertedDocument(source=source, title=title or path.stem, kind="epub", sections=sections)


def _paths_before(texts: list[str]) -> list[tuple[list[str], list[int]]]:
    """The heading path in force at the start of each text, carried on from the texts before it."""
    from text_splitter import heading_positions

    out = []
    stack: list[tuple[int, str]] = []
    for text in texts:
        out.append(([h for _, h in stack], [lvl for lvl, _ in stack]))
        for _, level, heading in heading_positions(text):
            while stack and stack[-1][0] >= level:
                stack.pop()
            stack.append((level, heading))
    return out
