"""OCR benchmark: speed against the text-layer path, character error rate, and retrieval on scans.

    .venv/bin/python bench/ocr_speed.py [--pages 5,6,24,...] [--threads N] [--skip-eval] [--json FILE]

Ten pages of Think Python (../shared/eval/thinkpython, read by path, never copied) are the
known text. They are rendered to images and rebuilt as image-only PDFs at 150, 200 and 300
dpi, plus a photo-like variant (200 dpi, rotated 1.5 degrees, grey noise, a slight blur,
JPEG at quality 60). For each: pages per second through docqa's PDF converter with OCR
(one worker, --threads OCR threads), against the text-layer conversion of the same pages,
and the character error rate (CER: edit distance / reference length, whitespace collapsed,
NFKC) of OCR's text against the page's own text layer. Then the dev questions whose pages
are all among the ten are asked of the 200 dpi image-only PDF and of the text PDF of the
same pages (retrieval hit@5 through evaluation.evaluate_qa). Prints a table and one JSON line.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import shutil
import sys
import tempfile
import time
import unicodedata
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
THINKPYTHON = ROOT.parent / "shared" / "eval" / "thinkpython"
VARIANTS = {"150dpi": (150, False), "200dpi": (200, False), "300dpi": (300, False), "photo": (200, True)}
"""Scan name -> (dpi, photo-like); the photo-like scan is read at OCR_DPI's default, 200."""
TEN_PAGES = [5, 6, 24, 34, 74, 119, 220, 226, 253, 261]
"""The pages of the dev questions dev-01 to dev-05 and dev-07 to dev-10: all their pages are among them."""


def levenshtein(a: str, b: str) -> int:
    """Edit distance, by Hyyrö's bit-parallel algorithm on Python's big integers (fast for pages of text)."""
    if not a or not b:
        return len(a) or len(b)
    m = len(a)
    peq: dict[str, int] = {}
    for i, ch in enumerate(a):
        peq[ch] = peq.get(ch, 0) | (1 << i)
    mask, high = (1 << m) - 1, 1 << (m - 1)
    pv, mv, score = mask, 0, m
    for ch in b:
        eq = peq.get(ch, 0)
        xv = eq | mv
        xh = (((eq & pv) + pv) ^ pv) | eq
        ph = mv | (~(xh | pv) & mask)
        mh = pv & xh
        if ph & high:
            score += 1
        elif mh & high:
            score -= 1
        ph = ((ph << 1) | 1) & mask
        mh = (mh << 1) & mask
        pv = mh | (~(xv | ph) & mask)
        mv = ph & xv
    return score


def normalised(text: str) -> str:
    return " ".join(unicodedata.normalize("NFKC", text).split())


def cer(reference: str, ocr_text: str) -> float:
    ref, hyp = normalised(reference), normalised(ocr_text)
    return levenshtein(ref, hyp) / max(1, len(ref))


def text_pdf(pages: list[int], out: Path) -> Path:
    """The chosen pages of the book, text layer and all, as their own PDF."""
    import pymupdf

    with pymupdf.open(THINKPYTHON / "thinkpython2.pdf") as book, pymupdf.open() as doc:
        for n in pages:
            doc.insert_pdf(book, from_page=n - 1, to_page=n - 1)
        doc.save(out)
    return out


def photo_like(png: bytes, seed: int) -> bytes:
    """A page as a phone photo of it might look: slightly turned, grainy, soft, JPEG-compressed."""
    import numpy as np
    from PIL import Image, ImageFilter

    image = Image.open(io.BytesIO(png)).convert("L").rotate(1.5, expand=True, fillcolor=255)
    pixels = np.asarray(image, dtype=np.float32)
    pixels += np.random.default_rng(seed).normal(0, 18, pixels.shape)
    image = Image.fromarray(np.clip(pixels, 0, 255).astype(np.uint8)).filter(ImageFilter.GaussianBlur(0.7))
    out = io.BytesIO()
    image.save(out, format="JPEG", quality=60)
    return out.getvalue()


def image_only_pdf(source: Path, out: Path, dpi: int, photo: bool = False) -> Path:
    """Every page of `source` rasterized at `dpi` and put back as a page that is only that image."""
    import pymupdf

    with pymupdf.open(source) as src, pymupdf.open() as doc:
        for n, page in enumerate(src):
            png = page.get_pixmap(dpi=dpi).tobytes("png")
            image = photo_like(png, n) if photo else png
            new = doc.new_page(width=page.rect.width, height=page.rect.height)
            new.insert_image(new.rect, stream=image)
        doc.save(out, deflate=True)
    return out


def measure_conversion(path: Path, threads: int, dpi: int | None) -> tuple[Any, float]:
    """(document, seconds) converting `path`; dpi None: the text-layer path, no OCR."""
    from document_converter import convert_document
    from ocr import OcrOptions, OcrReader

    reader = OcrReader(OcrOptions(dpi=dpi, threads=threads)) if dpi else None
    if reader:
        reader.read(__import__("numpy").full((64, 64), 255, dtype="uint8"))  # load the models first: not per page
    started = time.perf_counter()
    doc = convert_document(path, path.name, ocr=reader)
    return doc, time.perf_counter() - started


def page_cers(doc: Any, reference_pdf: Path) -> list[float]:
    import pymupdf

    with pymupdf.open(reference_pdf) as ref:
        layers = [page.get_text() for page in ref]
    texts = {n: "" for n in range(1, len(layers) + 1)}
    for section in doc.sections:
        texts[section.page] += "\n" + section.text
    return [round(cer(layers[n - 1], texts[n]), 4) for n in sorted(texts)]


def remapped_questions(pages: list[int], out: Path) -> int:
    """The dev questions whose pages are all among `pages`, their pages renumbered as in the ten-page PDF."""
    position = {p: i for i, p in enumerate(pages, start=1)}
    kept = []
    for line in (THINKPYTHON / "dev.jsonl").read_text(encoding="utf-8").splitlines():
        item = json.loads(line)
        if item["pages"] and all(p in position for p in item["pages"]):
            kept.append({**item, "pages": [position[p] for p in item["pages"]]})
    out.write_text("".join(json.dumps(it) + "\n" for it in kept), encoding="utf-8")
    return len(kept)


def hit_at_5(pdf: Path, qa: Path, work: Path, name: str) -> dict[str, Any]:
    from config import load_settings
    from evaluation import evaluate_qa

    docs = work / f"docs-{name}"
    docs.mkdir()
    shutil.copyfile(pdf, docs / "thinkpython-ten.pdf")  # a link out of the folder would not be followed
    settings = load_settings(overrides={"docs_dir": docs, "db_dir": work / f"data-{name}"})
    result = evaluate_qa(settings, qa, docs)
    return {k: result[k] for k in ("hit@1", "hit@5", "mrr", "answerable", "misses", "index_s")}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pages", default=",".join(map(str, TEN_PAGES)))
    parser.add_argument("--threads", type=int, default=1, help="OCR threads (the default of one worker of two on 2 cores)")
    parser.add_argument("--skip-eval", action="store_true", help="speed and CER only")
    parser.add_argument("--variants", default=",".join(VARIANTS), help="which scans to make and read (the eval needs 200dpi)")
    parser.add_argument("--json", type=Path, help="also write the results here")
    args = parser.parse_args()
    pages = [int(p) for p in args.pages.split(",")]
    results: dict[str, Any] = {"pages": pages, "threads": args.threads, "cpus": os.cpu_count(), "load_avg": os.getloadavg()[0]}
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        source = text_pdf(pages, work / "text.pdf")
        _, seconds = measure_conversion(source, args.threads, None)
        results["text_layer"] = {"pages_per_s": round(len(pages) / seconds, 2)}
        print("text layer", results["text_layer"], flush=True)
        for name in args.variants.split(","):
            dpi, photo = VARIANTS[name]
            scan = image_only_pdf(source, work / f"scan-{name}.pdf", dpi, photo)
            doc, seconds = measure_conversion(scan, args.threads, 200 if photo else dpi)
            cers = page_cers(doc, source)
            results[name] = {"pages_per_s": round(len(pages) / seconds, 3), "s_per_page": round(seconds / len(pages), 2),
                             "cer_mean": round(sum(cers) / len(cers), 4), "cer_pages": cers}
            print(name, results[name], flush=True)
        if not args.skip_eval:
            qa = work / "ten-pages.jsonl"
            results["questions"] = remapped_questions(pages, qa)
            results["hit_text_layer"] = hit_at_5(source, qa, work, "text")
            results["hit_scan_200dpi"] = hit_at_5(work / "scan-200dpi.pdf", qa, work, "scan")
    print_table(results)
    print(json.dumps(results))
    if args.json:
        args.json.write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")
    return 0


def print_table(r: dict[str, Any]) -> None:
    print(f"\n{len(r['pages'])} Think Python pages, {r['threads']} OCR thread(s), load average {r['load_avg']:.1f} on {r['cpus']} cores")
    print(f"{'variant':10} {'pages/s':>8} {'s/page':>7} {'CER':>7}")
    print(f"{'text layer':10} {r['text_layer']['pages_per_s']:>8} {'':>7} {'':>7}")
    for name in (n for n in VARIANTS if n in r):
        v = r[name]
        print(f"{name:10} {v['pages_per_s']:>8} {v['s_per_page']:>7} {v['cer_mean']:>7.2%}")
    for key in ("hit_text_layer", "hit_scan_200dpi"):
        if key in r:
            print(f"{key}: hit@5 {r[key]['hit@5']} hit@1 {r[key]['hit@1']} over {r[key]['answerable']} questions; misses {r[key]['misses']}")


if __name__ == "__main__":
    raise SystemExit(main())
