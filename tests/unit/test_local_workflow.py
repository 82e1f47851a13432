"""The local ContextWorkflow port shared by concurrent callers (the local API server's threads):
each caller gets the answer of its own execution, whatever the interleaving."""

import threading
from uuid import UUID

from heirloom.contracts.context import ContextRequest
from heirloom.local.workflow import Execution, LocalContextWorkflow


class EchoWorkflows:
    """Answers each execution with a context that is the request's query."""

    def run(self, name, payload, history=True):
        query = payload["request"]["query"]
        output = {
            "formatted_context": query,
            "metadata": {"intent": {}, "token_budget": 4000, "tokens_used": 1},
        }
        return Execution(status="SUCCEEDED", output=output, error=None, cause=None, seconds=0.0)


class Interleaved(LocalContextWorkflow):
    """Two callers both record their execution as `last` before either reads anything back:
    the worst interleaving of two requests served at once."""

    def __init__(self, workflows):
        self._both_recorded = threading.Barrier(2)
        self._last = None
        super().__init__(workflows)

    @property
    def last(self):
        return self._last

    @last.setter
    def last(self, value):
        self._last = value
        if value is not None:
            self._both_recorded.wait(timeout=5)


def test_two_concurrent_callers_each_get_their_own_answer():
    port = Interleaved(EchoWorkflows())
    answers: dict[str, str] = {}

    def caller(query: str) -> None:
        request = ContextRequest(legacy_id=UUID(int=1), user_id=UUID(int=2), persona="family", query=query)
        answers[query] = port.run(request).formatted_context

    threads = [threading.Thread(target=caller, args=(q,)) for q in ("from Ann", "from Bob")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert answers == {"from Ann": "from Ann", "from Bob": "from Bob"}
