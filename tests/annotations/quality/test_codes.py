import re

from annotations.quality.codes import code_verdict, completion_code

KEY = "test-secret"


def test_pass_and_fail_codes_look_alike_and_the_key_tells_them_apart():
    shape = re.compile(r"^[0-9A-HJKMNP-TV-Z]{5}-[0-9A-HJKMNP-TV-Z]{5}$")
    for annotator in range(50):
        good = completion_code(key=KEY, campaign=1, annotator=annotator, batch=0, passed=True)
        bad = completion_code(key=KEY, campaign=1, annotator=annotator, batch=0, passed=False)
        assert shape.match(good) and shape.match(bad) and good != bad
        assert code_verdict(key=KEY, code=good, campaign=1, annotator=annotator, batch=0) == "pass"
        assert code_verdict(key=KEY, code=bad, campaign=1, annotator=annotator, batch=0) == "fail"


def test_codes_are_bound_to_annotator_batch_campaign_and_key():
    code = completion_code(key=KEY, campaign=1, annotator=7, batch=2, passed=True)
    assert code_verdict(key=KEY, code=code, campaign=1, annotator=8, batch=2) is None
    assert code_verdict(key=KEY, code=code, campaign=1, annotator=7, batch=3) is None
    assert code_verdict(key=KEY, code=code, campaign=2, annotator=7, batch=2) is None
    assert code_verdict(key="other", code=code, campaign=1, annotator=7, batch=2) is None


def test_verification_forgives_case_dashes_and_lookalike_letters():
    code = completion_code(key=KEY, campaign=3, annotator=1, batch=0, passed=True)
    sloppy = code.lower().replace("-", " ").replace("0", "o").replace("1", "l")
    assert code_verdict(key=KEY, code=sloppy, campaign=3, annotator=1, batch=0) == "pass"
