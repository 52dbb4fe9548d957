"""Prompt lookup decoding for the embedded model: an answer's next tokens drafted from its own prompt.

An answer copies its passages' phrases. When the last tokens written also stand in the prompt,
the tokens that follow them there are a likely continuation: a draft. llama.cpp reads a draft of
a few tokens in one pass, in little more than the time of one token on two cores (writing is
bound by reading the weights, not by arithmetic), and the model's own choice at each drafted
position is kept up to the first one that differs. With greedy decoding the answer is the one
the model writes token by token, but for near-ties: a pass over several tokens adds up in another
order than a pass over one, and where two tokens score almost alike the other one may win.

Written here because llama-cpp-python 0.3.36's own `LlamaPromptLookupDecoding` turns on
`logits_all`: the logits of every prompt token are computed (a later first token), and a
prompt longer than one batch fails to store them (every Think Python answer came back empty).
`DraftingLlama` asks llama.cpp for the logits of a drafting pass only, and drafts only from a
match of two or more tokens, so a pass is not spent on a draft that one common token suggested.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
from llama_cpp import Llama
from llama_cpp.llama_speculative import LlamaDraftModel


class PromptLookup(LlamaDraftModel):
    """The tokens that followed the latest earlier occurrence of the last `longest` (down to
    `shortest`) tokens, at most `tokens` of them; none when the tail stands nowhere before."""

    def __init__(self, tokens: int, longest: int = 3, shortest: int = 2) -> None:
        self.tokens, self.longest, self.shortest = tokens, longest, shortest

    def __call__(self, input_ids: npt.NDArray[np.intc], /, **kwargs: Any) -> npt.NDArray[np.intc]:
        ids = np.asarray(input_ids)
        for size in range(self.longest, self.shortest - 1, -1):
            if len(ids) <= size:
                continue
            earlier = np.lib.stride_tricks.sliding_window_view(ids[:-1], size)
            found = np.nonzero((earlier == ids[-size:]).all(axis=1))[0]
            if len(found):
                start = int(found[-1]) + size
                return ids[start : start + self.tokens].astype(np.intc)
        return np.array([], dtype=np.intc)


class DraftingLlama(Llama):
    """A `Llama` whose drafting passes return the logits of every drafted token, and whose other
    passes (the prompt) only the last token's, as without drafts. `passes` counts the model's passes."""

    passes = 0

    def eval(self, tokens: Sequence[int]) -> None:
        draft = self.draft_model
        every = isinstance(draft, PromptLookup) and len(tokens) <= draft.tokens + 1
        self._ctx.kv_cache_seq_rm(-1, self.n_tokens, -1)
        for start in range(0, len(tokens), self.n_batch):
            self.passes += 1
            batch = list(tokens[start : start + self.n_batch])
            self._batch.set_batch(batch=batch, n_past=self.n_tokens, logits_all=every)
            self._ctx.decode(self._batch)
            self.input_ids[self.n_tokens : self.n_tokens + len(batch)] = batch
            self.n_tokens += len(batch)
            self._requires_eval = False
