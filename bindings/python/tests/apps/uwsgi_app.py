"""A WSGI app for tests/test_uwsgi.py: uWSGI loads it in its master (unless ``--lazy-apps``), which issues ids
before it forks its workers; each request issues ids in a worker and returns them, or the error, as JSON."""

import json
import os

import cosid

OUT = os.environ["COSID_UWSGI_OUT"]

if os.environ.get("COSID_UWSGI_CALLBACK"):
    # Every event, renewals included, runs Python on the keeper thread: the GIL is taken at every renewal.
    _events = []

    @cosid.on_event
    def _count(event: cosid.Event) -> None:
        _events.append(event.name)
        del _events[:-100]

# In the master, before the fork (with --lazy-apps, in each worker).
_ids = cosid.next_ids(200)
_status = cosid.status()
with open(os.path.join(OUT, f"loaded-{os.getpid()}.json"), "w") as f:
    json.dump({"pid": os.getpid(), "slot": _status.slot, "incarnation": _status.incarnation, "ids": _ids}, f)


def application(environ, start_response):  # type: ignore[no-untyped-def]
    try:
        ids = cosid.next_ids(20) + [cosid.next_id() for _ in range(5)]
        s = cosid.status()
        body = {"pid": os.getpid(), "slot": s.slot, "incarnation": s.incarnation, "ids": ids}
        status = "200 OK"
    except Exception as e:  # noqa: BLE001 - the test reports it
        body = {"pid": os.getpid(), "error": f"{type(e).__name__}: {e}"}
        status = "500 Internal Server Error"
    data = json.dumps(body).encode()
    start_response(status, [("Content-Type", "application/json"), ("Content-Length", str(len(data)))])
    return [data]
