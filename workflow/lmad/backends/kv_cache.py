"""A KV cache whose room for the tokens still to come is reserved ahead.

transformers' DynamicCache grows by concatenation, so every decode step copies the whole cache
of every layer: on a batch of 30 multi-hop prompts (~2,400 tokens) on 2 cores that copy was
63 % of a decode step's time and the model's matrix work 7 % (py-spy). Here a step writes its
token into the reserved room. Imported only where transformers is.
"""
from __future__ import annotations

import torch
from transformers.cache_utils import Cache, DynamicCache, DynamicLayer


class ReservedLayer(DynamicLayer):
    """A DynamicLayer over a buffer with ``reserve`` free positions after each growth; ``keys``
    and ``values`` are views of its filled part."""

    def __init__(self, reserve: int):
        super().__init__()
        self.reserve = reserve
        self.length = 0
        self._keys = self._values = None

    def update(self, key_states: torch.Tensor, value_states: torch.Tensor, *args, **kwargs):
        if not self.is_initialized:
            self.lazy_initialization(key_states, value_states)
        need = self.length + key_states.shape[-2]
        if self._keys is None or need > self._keys.shape[-2]:
            self._keys, self._values = (self._grown(old, new, need + self.reserve)
                                        for old, new in ((self._keys, key_states), (self._values, value_states)))
        self._keys[..., self.length:need, :] = key_states
        self._values[..., self.length:need, :] = value_states
        self.length = need
        self.keys, self.values = self._keys[..., :need, :], self._values[..., :need, :]
        return self.keys, self.values

    def _grown(self, old: torch.Tensor | None, new: torch.Tensor, capacity: int) -> torch.Tensor:
        buffer = new.new_empty(*new.shape[:-2], capacity, new.shape[-1])
        if old is not None and self.length:
            buffer[..., : self.length, :] = old[..., : self.length, :]
        return buffer

    def batch_select_indices(self, indices: torch.Tensor) -> None:
        """Keep (or repeat) rows ``indices``, reserve included (a few % of the filled part)."""
        if self.length:
            self._keys, self._values = self._keys[indices], self._values[indices]
            self.keys, self.values = self._keys[..., : self.length, :], self._values[..., : self.length, :]

    def extend_rows(self, other: "ReservedLayer", reserve: int) -> None:
        """``other``'s rows after this layer's, both left-padded to the wider of the two with zeros
        (masked out; zeros rather than empty memory, whose NaNs a zero weight would not cancel), and
        ``reserve`` free positions after."""
        width = max(self.length, other.length)
        grown = []
        for mine, theirs in ((self._keys, other._keys), (self._values, other._values)):
            buffer = mine.new_zeros(mine.shape[0] + theirs.shape[0], *mine.shape[1:-2], width + reserve, mine.shape[-1])
            buffer[: mine.shape[0], ..., width - self.length : width, :] = mine[..., : self.length, :]
            buffer[mine.shape[0] :, ..., width - other.length : width, :] = theirs[..., : other.length, :]
            grown.append(buffer)
        self._keys, self._values = grown
        self.length, self.reserve = width, reserve
        self.keys, self.values = self._keys[..., :width, :], self._values[..., :width, :]

    def batch_repeat_interleave(self, repeats: int) -> None:
        if self.length:
            self.batch_select_indices(torch.arange(self._keys.shape[0]).repeat_interleave(repeats))

    def crop(self, tokens_to_remove: int) -> None:
        raise NotImplementedError("a reserved KV cache is not cropped")

    def reset(self) -> None:
        self.length = 0
        self._keys = self._values = None
        super().reset()


class ReservedCache(DynamicCache):
    """A DynamicCache of ReservedLayers: each layer reserves ``reserve`` positions past what it holds."""

    def __init__(self, reserve: int):
        Cache.__init__(self, layer_class_to_replicate=lambda: ReservedLayer(reserve))

    def extend_rows(self, other: "ReservedCache", reserve: int) -> None:
        """Append ``other``'s rows (a batch prefilled apart) to this cache's, layer by layer."""
        for mine, theirs in zip(self.layers, other.layers, strict=True):
            mine.extend_rows(theirs, reserve)
