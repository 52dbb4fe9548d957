"""Text from images of text, offline: the OCR engine behind one small interface.

Scanned PDF pages and image files are read by RapidOCR (`rapidocr-onnxruntime`): the
PP-OCRv4 detection and recognition models ship inside its wheel and run on the
onnxruntime docqa already has, so nothing is downloaded at run time (its config.yaml
points at `models/` in the package; a test runs it with no network). Tesseract would
need a system package (`apt install tesseract-ocr`) and its language data, which
`make setup` cannot install; it is not used. Measured on this shared 2-core machine
(`bench/ocr_speed.py`, ten Think Python pages, one thread): 0.07 pages/s against 65 for the
text layer; character error rate 6.3% at 150 dpi, 5.5% at 200 (the default), 3.8% at 300,
7.8% for a photo-like scan; retrieval hit@5 on the scans 1.0, as on the text layer.

The engine is created lazily, in the converter worker that first meets a page needing
it: importing RapidOCR and loading its models costs about half a second, which a folder
of text files should never pay. The converters see only `OcrReader.read(image)`.
"""

from __future__ import annotations

import hashlib
import logging
from dataclasses import asdict, dataclass
from typing import Any, Callable, Protocol

from config import Settings
from errors import ConversionError

log = logging.getLogger(__name__)

OCR_INSTALL_HINT = "OCR needs rapidocr-onnxruntime (Python 3.11 or 3.12): run `make setup`, or set OCR=off in .env"


ENGINE_TAG = "rapidocr-onnxruntime 1.4.4, PP-OCRv4, no dilation"
"""Part of every OCR cache key: change it when the engine or its configuration changes what it reads."""


class OcrUnavailable(ConversionError):
    """No OCR engine can run here: every file needing OCR fails with the install hint."""


@dataclass(frozen=True)
class OcrOptions:
    """What decides whether and how pages are read by OCR; sent to the converter workers."""

    min_page_chars: int = 20
    dpi: int = 200
    threads: int = 1
    text_page_images: bool = False
    min_image_px: int = 64

    def variant(self) -> str:
        """A short tag of the options that change what a conversion produces, for its cache file name."""
        what = asdict(self)
        what.pop("threads")  # the same text, however many threads read it
        return "ocr-" + hashlib.sha256(repr((ENGINE_TAG, sorted(what.items()))).encode()).hexdigest()[:10]


def ocr_options(settings: Settings, workers: int) -> OcrOptions | None:
    """The OCR options of these settings, or None when OCR is off.

    OCR_THREADS=0 shares the cores among the converter workers: each worker reads one
    page at a time, so two workers on two cores get one thread each, not two fighting
    over one core.
    """
    if settings.ocr == "off":
        return None
    import os

    threads = settings.ocr_threads or max(1, (os.cpu_count() or 1) // max(1, workers))
    return OcrOptions(
        min_page_chars=settings.ocr_min_page_chars,
        dpi=settings.ocr_dpi,
        threads=threads,
        text_page_images=settings.ocr_text_page_images == "on",
    )


class OcrEngine(Protocol):
    """One method: the text of an image of text, lines in reading order."""

    def read_text(self, image: Any) -> str:
        """`image`: a 2-D uint8 numpy array (grayscale)."""
        ...


class RapidOcrEngine:
    """RapidOCR with its packaged PP-OCRv4 models, created on the first image."""

    def __init__(self, threads: int = 1) -> None:
        self.threads = threads
        self._ocr: Any = None

    def _engine(self) -> Any:
        if self._ocr is None:
            try:
                from rapidocr_onnxruntime import RapidOCR
            except ImportError as exc:
                raise OcrUnavailable(OCR_INSTALL_HINT) from exc
            # Dilation joins the detected text of neighbouring lines on a page of book print into one box that
            # reads as garbage: off, a Think Python page went from 15% CER to 0.7% (bench/ocr_speed.py).
            self._ocr = RapidOCR(intra_op_num_threads=self.threads, inter_op_num_threads=1, det_use_dilation=False)
            log.debug("OCR engine loaded (%d threads)", self.threads)
        return self._ocr

    def read_text(self, image: Any) -> str:
        result, _ = self._engine()(image)
        return lines_in_reading_order(result or [])


def lines_in_reading_order(result: list[Any]) -> str:
    """RapidOCR's boxes ([corners, text, score]) as text: boxes side by side on one line,
    lines top to bottom, and a blank line where the gap above a line says a paragraph starts."""
    boxes = []
    for corners, text, _score in result:
        ys = [p[1] for p in corners]
        xs = [p[0] for p in corners]
        if text.strip():
            boxes.append((min(ys), max(ys), min(xs), text.strip()))
    boxes.sort()
    lines: list[tuple[float, float, list[tuple[float, str]]]] = []  # (top, bottom, [(x, text)])
    for top, bottom, x, text in boxes:
        if lines:
            last_top, last_bottom, parts = lines[-1]
            middle = (top + bottom) / 2
            if last_top <= middle <= last_bottom:
                parts.append((x, text))
                lines[-1] = (last_top, max(last_bottom, bottom), parts)
                continue
        lines.append((top, bottom, [(x, text)]))
    heights = sorted(b - t for t, b, _ in lines)
    usual = heights[len(heights) // 2] if heights else 0.0
    out: list[str] = []
    previous_bottom = None
    for top, bottom, parts in lines:
        if previous_bottom is not None and usual and top - previous_bottom > 0.8 * usual:
            out.append("")
        out.append(" ".join(text for _, text in sorted(parts)))
        previous_bottom = bottom
    return "\n".join(out).strip()


class OcrReader:
    """What a converter reads images with: the options and an engine (handed in by tests)."""

    def __init__(self, options: OcrOptions, engine: OcrEngine | None = None) -> None:
        self.options = options
        self.engine: OcrEngine = engine or RapidOcrEngine(options.threads)
        self.on_page: Callable[[], None] | None = None
        """Called after each image read: the worker's sign of life while a long scan is read page by page."""

    def read(self, image: Any) -> str:
        """The image's text. OcrUnavailable when the engine is missing; any other engine
        failure as a ConversionError, so the caller can give up on this page alone."""
        try:
            return self.engine.read_text(image)
        except ConversionError:
            raise
        except MemoryError as exc:
            raise ConversionError("OCR needed more memory than the conversion limit allows (CONVERT_MEMORY_MB)") from exc
        except Exception as exc:
            raise ConversionError(f"OCR failed: {type(exc).__name__}: {exc}") from exc
        finally:
            if self.on_page is not None:
                self.on_page()


def grayscale_array(pixmap: Any) -> Any:
    """A PyMuPDF pixmap as the 2-D uint8 array the engine reads (rendered in grey already)."""
    import numpy as np

    return np.frombuffer(pixmap.samples, dtype=np.uint8).reshape(pixmap.height, pixmap.width, pixmap.n)[:, :, 0].copy()
