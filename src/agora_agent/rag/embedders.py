"""Embedders: one protocol, a deterministic hashing embedder (no dependency) and any OpenAI-compatible
embeddings endpoint. The local CPU model lives in `agora_agent.rag.local` (the `rag-local` extra)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from agora_agent.errors import ConfigurationError, ModelError

if TYPE_CHECKING:
    import openai

    from agora_agent.models.openai import OpenAIChatModel

__all__ = ["Embedder", "HashingEmbedder", "OpenAIEmbedder"]

_TOKEN = re.compile(r"[a-z0-9]+")


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into vectors (the reference's `EmbeddingProvider`).

    `model_id` is stored with every vector (vectors of different models are never compared);
    `dimensions` is the vector length, or None until the first call tells (remote models).
    """

    model_id: str

    @property
    def dimensions(self) -> int | None: ...

    async def embed(self, texts: Sequence[str]) -> list[list[float]]: ...


class HashingEmbedder:
    """Feature hashing of lowercase `[a-z0-9]+` tokens with 32-bit FNV-1a into `dimensions` buckets.

    Deterministic and dependency-free: for tests, CI and the offline demo. It captures word overlap only,
    not meaning — use the local or a remote model for real corpora.
    """

    def __init__(self, dimensions: int = 64) -> None:
        if dimensions < 1:
            raise ConfigurationError(f"HashingEmbedder: dimensions must be at least 1 (got {dimensions})")
        self._dimensions = dimensions
        self.model_id = f"hashing-fnv1a-{dimensions}"

    @property
    def dimensions(self) -> int:
        return self._dimensions

    def embed_one(self, text: str) -> list[float]:
        """The vector of one text (token counts per bucket)."""
        vector = [0.0] * self._dimensions
        for token in _TOKEN.findall(text.lower()):
            vector[fnv1a(token) % self._dimensions] += 1.0
        return vector

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        return [self.embed_one(t) for t in texts]


def fnv1a(token: str) -> int:
    """32-bit FNV-1a of the UTF-8 bytes (offset 2166136261, prime 16777619)."""
    h = 2166136261
    for byte in token.encode():
        h = ((h ^ byte) * 16777619) & 0xFFFFFFFF
    return h


class OpenAIEmbedder:
    """Any OpenAI-compatible `/embeddings` endpoint: OpenAI, Ollama, vLLM, LM Studio, a LiteLLM proxy.

    Pass `client` (an `openai.AsyncOpenAI`) or build from the chat adapter with `from_chat_model`, so one
    configured client (key, base URL, timeouts) serves both; otherwise the key and base URL are read the way
    `OpenAIChatModel` reads them. Texts go in batches of `batch_size`; failures raise `ModelError`.
    """

    def __init__(
        self,
        model: str = "text-embedding-3-small",
        *,
        client: openai.AsyncOpenAI | None = None,
        base_url: str | None = None,
        api_key: str | None = None,
        dimensions: int | None = None,
        request_dimensions: bool = False,
        batch_size: int = 256,
    ) -> None:
        if not model:
            raise ConfigurationError("OpenAIEmbedder needs a model name, e.g. 'text-embedding-3-small'")
        if batch_size < 1:
            raise ConfigurationError(f"OpenAIEmbedder: batch_size must be at least 1 (got {batch_size})")
        self._owns_client = client is None
        if client is None:
            from agora_agent.models.openai import OpenAIChatModel

            client = OpenAIChatModel(model, base_url=base_url, api_key=api_key).client
        self.client = client
        self.model = model
        self.model_id = f"openai:{model}"
        self._dimensions = dimensions
        # Only models that support shortening accept `dimensions` in the request (text-embedding-3-*).
        self._request_dimensions = request_dimensions and dimensions is not None
        self.batch_size = batch_size

    @classmethod
    def from_chat_model(
        cls, chat_model: OpenAIChatModel, model: str = "text-embedding-3-small", **options: Any
    ) -> OpenAIEmbedder:
        """Reuse the chat adapter's client (same key, base URL and HTTP pool)."""
        return cls(model, client=chat_model.client, **options)

    @property
    def dimensions(self) -> int | None:
        return self._dimensions

    async def aclose(self) -> None:
        """Close the HTTP pool if this embedder created the client (a passed-in client is left open)."""
        if self._owns_client:
            await self.client.close()

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        import openai

        out: list[list[float]] = []
        for start in range(0, len(texts), self.batch_size):
            batch = list(texts[start : start + self.batch_size])
            extra: dict[str, Any] = {"dimensions": self._dimensions} if self._request_dimensions else {}
            try:
                response = await self.client.embeddings.create(
                    model=self.model, input=batch, encoding_format="float", **extra
                )
            except openai.APIStatusError as exc:
                raise ModelError(
                    f"embeddings request failed ({exc.status_code}): {_message(exc)}", status=exc.status_code
                ) from None
            except openai.OpenAIError as exc:
                raise ModelError(f"embeddings request failed: {type(exc).__name__}", retryable=True) from None
            rows = sorted(response.data, key=lambda d: d.index)
            if len(rows) != len(batch):
                raise ModelError(
                    f"embeddings endpoint returned {len(rows)} vectors for {len(batch)} texts", code="bad_response"
                )
            for row in rows:
                vector = [float(x) for x in row.embedding]
                if self._dimensions is None:
                    self._dimensions = len(vector)
                elif len(vector) != self._dimensions:
                    raise ModelError(
                        f"embeddings endpoint returned {len(vector)} dimensions, expected {self._dimensions}",
                        code="dimensions_changed",
                    )
                out.append(vector)
        return out


def _message(exc: Any) -> str:
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        error = body.get("error", body)  # the SDK unwraps `{"error": {...}}` for most servers
        if isinstance(error, dict) and isinstance(error.get("message"), str):
            return str(error["message"])[:200]
    return type(exc).__name__
