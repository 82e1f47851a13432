"""The local ContextWorkflow port shared by concurrent callers (the local API server's threads):
each caller gets the answer of its own execution, whatever the interleaving."""

import threading
from uuid import UUID

from heirloom.contracts.context import ContextRequest
from heirloom_dev.workflow import Execution, LocalContextWorkflow, LocalWorkflows


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


class HalfFinishedClient:
    """moto's order of writes: the status first, then the output (or the error)."""

    def __init__(self, final):
        self.reads = [{"status": "RUNNING"}, {"status": final["status"]}, final]

    def start_execution(self, **kwargs):
        return {"executionArn": "arn:execution"}

    def describe_execution(self, executionArn):
        return self.reads.pop(0) if len(self.reads) > 1 else self.reads[0]


def run_with(final):
    workflows = LocalWorkflows()
    workflows._client = HalfFinishedClient(final)
    workflows._machines = {"context_assembly": "arn:machine"}
    return workflows.run("context_assembly", {}, history=False)


def test_a_finished_execution_is_read_once_its_output_or_error_is_there():
    done = run_with({"status": "SUCCEEDED", "output": '{"formatted_context": "x"}'})
    assert done.output == {"formatted_context": "x"}
    failed = run_with({"status": "FAILED", "error": "AccessDenied", "cause": "not a member"})
    assert failed.error == "AccessDenied"


def test_an_execution_that_timed_out_is_a_typed_timeout():
    import pytest

    from heirloom.domain.context_api import WorkflowTimedOut

    class TimedOut:
        def run(self, name, payload, history=True):
            return Execution(status="TIMED_OUT", output=None, error=None, cause=None, seconds=10.0)

    request = ContextRequest(legacy_id=UUID(int=1), user_id=UUID(int=2), persona="family", query="q")
    with pytest.raises(WorkflowTimedOut):
        LocalContextWorkflow(TimedOut()).run(request)
