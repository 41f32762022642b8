"""A stand-in OpenAI-compatible judge server that always gives the same verdict.

Named as a stand-in: it is not a model. The cache tests need two real server processes that
disagree on every question (one always YES, one always NO), which no real model does on
demand. Run: ``python canned_judge.py VERDICT``; it prints its port, then serves
``POST /v1/chat/completions`` on 127.0.0.1 until killed, answering VERDICT with logprobs.
"""

from __future__ import annotations

import json
import math
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def main() -> None:
    verdict = sys.argv[1]
    other = "NO" if verdict == "YES" else "YES"

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: object) -> None:
            pass

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length", 0)))
            candidates = [
                {"token": verdict, "logprob": math.log(0.9)},
                {"token": other, "logprob": math.log(0.1)},
            ]
            body = json.dumps(
                {
                    "choices": [
                        {
                            "message": {"role": "assistant", "content": verdict},
                            "logprobs": {
                                "content": [
                                    {
                                        "token": verdict,
                                        "logprob": math.log(0.9),
                                        "top_logprobs": candidates,
                                    }
                                ]
                            },
                        }
                    ],
                    "usage": {"prompt_tokens": 10, "completion_tokens": 1},
                }
            ).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    print(server.server_address[1], flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
