"""What to read and how each input is opened (distdx.logs.inputs); reading itself is in test_reader."""

from distdx.logs.inputs import rank_from_path


def test_rank_from_file_names():
    assert rank_from_path("logs/rank3.log") == (3, None)
    assert rank_from_path("logs/train.12.log") == (12, None)
    assert rank_from_path("/tmp/x/run/attempt_0/5/error.json") == (None, 5)
