"""scripts/bench/bench_replicas.py: each light client is a browser of its own behind the balancer (its own sticky
cookie) and sends its address's query string (a student's ?class=CODE) with every run, as the browser does."""
from scripts.bench.bench_replicas import StickySession, per_run_cpu, per_student_second


def test_a_session_sends_its_query_string_and_keeps_its_own_cookie():
    a, b = StickySession("http://localhost:1", "lesson", "class=K7PM3Q"), StickySession("http://localhost:1")
    msg = a.back_msg().rerun_script
    assert msg.query_string == "class=K7PM3Q" and msg.page_name == "lesson"
    assert len(a.key) == 32 and a.key != b.key and b.back_msg().rerun_script.query_string == ""
    fragment = a.back_msg("frag-1").rerun_script
    assert fragment.fragment_id == "frag-1" and fragment.is_auto_rerun and fragment.query_string == "class=K7PM3Q"


def test_cpu_per_run_and_per_following_student_second():
    class W:
        def __init__(self, cpu, student_seconds=0.0):
            self.cpu, self.student_seconds = cpu, student_seconds
    assert per_run_cpu([([1, 2, 3], W(0.3)), ([1], W(0.1))]) == 0.1
    assert per_run_cpu([([1], W(None))]) is None
    assert per_student_second([([], W(1.5, 300.0)), ([], W(0.5, 100.0))]) == 0.005
