"""The run's end cancels Snakemake's rescheduling timers, so the interpreter exits at once."""
import threading
import time

from lmad.run_end import cancel_scheduler_timers


def test_pending_timers_are_cancelled_and_finished_ones_are_not_counted():
    fired = []
    done = threading.Timer(0, lambda: fired.append("done"))
    done.start()
    done.join()
    pending = [threading.Timer(60, lambda: fired.append("late")) for _ in range(3)]
    for timer in pending:
        timer.start()
    start = time.perf_counter()
    assert cancel_scheduler_timers() == 3
    for timer in pending:
        timer.join(timeout=5)
        assert not timer.is_alive()
    assert time.perf_counter() - start < 5
    assert fired == ["done"]
    assert cancel_scheduler_timers() == 0
