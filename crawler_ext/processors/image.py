"""Images: format, size and a perceptual hash (``imagehash``'s pHash on Pillow).

Two encodings of one picture (PNG and JPEG, another quality, a resize) have pHashes a few
bits apart, so content dedup's SimHash index finds them as it finds near-duplicate text.
Pillow's decompression-bomb guard stays on, and its warning (more than
``Image.MAX_IMAGE_PIXELS`` pixels) refuses the image too (``refused = "bomb"``): nothing is
decoded at full size that large.  Images have no links.
"""

from __future__ import annotations

import io
import warnings

from crawler_ext.processors.contract import Document, Processed

__all__ = ["ImageProcessor"]


class ImageProcessor:
    name = "imagehash"
    content_kind = "image"

    def process(self, document: Document) -> Processed:
        import imagehash
        from PIL import Image, UnidentifiedImageError

        with warnings.catch_warnings():
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            try:
                image = Image.open(io.BytesIO(document.body))
                metadata = {"format": image.format or "", "width": image.width,
                            "height": image.height, "mode": image.mode}
                image.draft("L", (128, 128))  # JPEG: decoded at a fraction of its size
                phash = imagehash.phash(image)
            except (Image.DecompressionBombError, Image.DecompressionBombWarning) as exc:
                return Processed("image", self.name, refused="bomb",
                                 metadata={"error": str(exc)[:200]})
            except (UnidentifiedImageError, OSError, ValueError, SyntaxError) as exc:
                return Processed("image", self.name, refused="error",
                                 metadata={"error": type(exc).__name__})
        metadata["phash"] = str(phash)
        return Processed("image", self.name, "", (), metadata)
