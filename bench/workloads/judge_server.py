"""A fake OpenAI-compatible provider for the judged workloads, in a process of its own.

Usage: ``python judge_server.py DELAY``. Prints its ``base_url`` on one line, then answers
every chat completion with a judge's verdict after DELAY seconds, as a provider's latency,
until it is terminated: agenteval's judges get ``{"reasoning": ..., "score": 0.9}`` as
structured output, pydantic-evals' ``LLMJudge`` a call of the output tool it offers. It is agenteval's own
``FakeProvider``: HTTP/1.1 on 127.0.0.1, a thread per connection.
"""

from __future__ import annotations

import signal
import sys

from agenteval.testing import FakeProvider
from agenteval.testing._fake_provider import FakeReply, RecordedRequest


def main() -> None:
    delay = float(sys.argv[1])
    verdict = FakeProvider.structured({"reasoning": "Same answer.", "score": 0.9})

    def reply(request: RecordedRequest) -> FakeReply:
        tools = (request.json or {}).get("tools")
        if tools:  # pydantic-ai asks for its judge's grading through a tool of its own
            grading = {"reason": "Same answer.", "pass": True, "score": 0.9}
            return FakeProvider.tool_call(tools[0]["function"]["name"], grading).delayed(delay)
        return verdict.delayed(delay)

    fake = FakeProvider(responder=reply).start()
    print(fake.openai_base_url, flush=True)
    signal.sigwait({signal.SIGTERM, signal.SIGINT})
    fake.stop()


if __name__ == "__main__":
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM, signal.SIGINT})
    main()
