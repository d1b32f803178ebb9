"""A fake OpenAI-compatible provider for the judged workloads, in a process of its own.

Usage: ``python judge_server.py DELAY``. Prints its ``base_url`` on one line, then answers
every chat completion with a judge's verdict (``{"reasoning": ..., "score": 0.9}``) after
DELAY seconds, as a provider's latency, until it is terminated. It is agenteval's own
``FakeProvider``: HTTP/1.1 on 127.0.0.1, a thread per connection.
"""

from __future__ import annotations

import signal
import sys

from agenteval.testing import FakeProvider


def main() -> None:
    delay = float(sys.argv[1])
    verdict = FakeProvider.structured({"reasoning": "Same answer.", "score": 0.9})
    fake = FakeProvider(responder=lambda request: verdict.delayed(delay)).start()
    print(fake.openai_base_url, flush=True)
    signal.sigwait({signal.SIGTERM, signal.SIGINT})
    fake.stop()


if __name__ == "__main__":
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM, signal.SIGINT})
    main()
