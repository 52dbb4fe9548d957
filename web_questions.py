"""Questions waiting their turn: across pages (at most UI_CONCURRENCY answers at once, a rate
limit per client) and within one page (ChatSession: a question asked while the page's previous
answer is still being written waits under it, visibly, and is answered next).

No Gradio here: the handlers (web_handlers.py) drive these, and they are tested on their own.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from dataclasses import dataclass
from typing import Any

from web_html import Message, queued_message, stopped_message

STARTING: Message = {"role": "assistant", "content": "…"}


@dataclass(frozen=True)
class Question:
    """A question from the page, with the documents it was limited to when asked."""

    text: str
    shown: Message
    files: list[str] | None


class ChatSession:
    """One page's conversation, kept on the server (a gr.State holds it, one per page).

    Every ask event adds its question here; one answer is written at a time per page, and the
    chat shown is always: the turns answered, the answer being written, then each question still
    waiting. A waiting question is never dropped: the loop that writes answers (Handlers.answer_all)
    takes the next one before it lets go, under the same lock as `add`.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.turns: list[Message] = []
        """The chat as shown, answered turns only."""
        self.history: list[Message] = []
        """The same turns as plain text, for follow-up questions (RAGSystem.history_after)."""
        self.current: list[Message] = []
        """The question being answered and its answer so far."""
        self.pending: deque[Question] = deque()
        self.answering = False
        self.stop_requested = False
        self.chat_number = 0
        """Raised by New chat: an answer begun before it is not added to the new chat."""
        self.last_answer: Any = None
        """The answer being written, as last shown (its sources, for Stop to relabel at once)."""

    def __deepcopy__(self, memo: dict[int, Any]) -> ChatSession:
        """Gradio copies a State's first value for each page: each page gets a new, empty one."""
        return ChatSession()

    def add(self, question: Question) -> None:
        with self._lock:
            self.pending.append(question)

    def claim(self) -> bool:
        """Whether the caller is now the one writing this page's answers (False: another already is)."""
        with self._lock:
            if self.answering:
                return False
            self.answering = True
            return True

    def next_question(self) -> Question | None:
        """The next waiting question, now being answered; None, and no longer answering, when none waits."""
        with self._lock:
            self.stop_requested = False
            if not self.pending:
                self.answering = False
                self.current = []
                return None
            question = self.pending.popleft()
            self.current, self.last_answer = [question.shown], None
            return question

    def show(self, answer: Message) -> None:
        self.current = [*self.current[:1], answer]

    def finish(self, chat_number: int, history: list[Message] | None, stopped: bool = False) -> None:
        """The current turn is over: kept in the chat (marked when stopped), unless New chat came meanwhile."""
        with self._lock:
            if chat_number == self.chat_number and self.current:
                turn = self.current
                if stopped:
                    turn = [turn[0], stopped_message(turn[1] if len(turn) > 1 else None)]
                self.turns = [*self.turns, *turn]
                if history is not None:
                    self.history = history
            self.current = []

    def abandon(self) -> None:
        """The loop writing answers ended early (its page went away): let the next ask start another."""
        with self._lock:
            self.answering, self.current = False, []

    def stop(self) -> bool:
        """Ask the answer being written to end; False when none is."""
        with self._lock:
            self.stop_requested = self.answering and bool(self.current)
            return self.stop_requested

    def clear(self) -> None:
        """New chat: forget the turns, drop the waiting questions, end the answer being written."""
        with self._lock:
            self.chat_number += 1
            self.turns, self.history, self.current = [], [], []
            self.pending.clear()
            self.stop_requested = self.answering

    def chat(self) -> list[Message]:
        """What the chat shows now."""
        with self._lock:
            # The first question waits for nothing while no answer is being written: it is about to start.
            waits = [bool(self.current) or n > 0 for n in range(len(self.pending))]
            waiting = [m for q, queued in zip(self.pending, waits, strict=True) for m in (q.shown, queued_message() if queued else STARTING)]
            return [*self.turns, *self.current, *waiting]


class RateLimiter:
    """At most `per_minute` questions per client in any sliding minute."""

    def __init__(self, per_minute: int) -> None:
        self.per_minute = per_minute
        self._seen: dict[str, deque[float]] = {}
        self._lock = threading.Lock()

    def wait_s(self, client: str) -> float:
        """0 when the client may ask now, else the seconds until it may."""
        if self.per_minute <= 0:
            return 0.0
        now = time.monotonic()
        with self._lock:
            times = self._seen.setdefault(client, deque())
            while times and now - times[0] >= 60:
                times.popleft()
            if len(times) >= self.per_minute:
                return 60 - (now - times[0])
            times.append(now)
            return 0.0


class AnswerSlots:
    """At most `limit` answers generated at once (UI_CONCURRENCY); later questions wait in
    arrival order, each knowing how many are ahead of it, so its page can say so.

    Gradio's queue would hold them too, but the page shows only a pending "…" meanwhile;
    so the ask events leave Gradio's limit off and wait here. A waiter that stops asking
    (its page gone and its handler never closed) is dropped after STALE_S.
    """

    STALE_S = 15.0

    def __init__(self, limit: int) -> None:
        self.limit = max(1, limit)
        self._cond = threading.Condition()
        self._holding: set[object] = set()
        self._waiting: dict[object, float] = {}  # ticket -> when it last asked; dicts keep arrival order

    def join(self) -> object:
        ticket = object()
        with self._cond:
            self._waiting[ticket] = time.monotonic()
        return ticket

    def wait_turn(self, ticket: object, timeout: float) -> int:
        """0 once `ticket` holds a slot (it then must `leave`), else, after up to `timeout` s, how many are ahead."""
        with self._cond:
            self._cond.wait_for(lambda: self._may_go(ticket), timeout)
            if self._may_go(ticket):
                del self._waiting[ticket]
                self._holding.add(ticket)
                return 0
            self._waiting[ticket] = time.monotonic()
            return len(self._holding) + list(self._waiting).index(ticket)

    def _may_go(self, ticket: object) -> bool:
        stale = [t for t, seen in self._waiting.items() if t is not ticket and time.monotonic() - seen > self.STALE_S]
        for t in stale:
            del self._waiting[t]
        return len(self._holding) < self.limit and next(iter(self._waiting), None) is ticket

    def leave(self, ticket: object) -> None:
        with self._cond:
            self._holding.discard(ticket)
            self._waiting.pop(ticket, None)
            self._cond.notify_all()


def client_id(request: Any) -> str:
    if request is None:
        return "local"
    user = getattr(request, "username", None)
    host = getattr(getattr(request, "client", None), "host", None) or "unknown"
    return f"{user}@{host}" if user else host
