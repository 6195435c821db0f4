from citewell import errors


def all_errors():
    return [
        obj
        for obj in vars(errors).values()
        if isinstance(obj, type) and issubclass(obj, errors.CitewellError)
    ]


def test_every_error_has_a_status_and_a_stable_unique_code():
    codes = {}
    for cls in all_errors():
        assert 400 <= cls.status < 600
        assert cls.code and cls.code == cls.code.lower()
        if cls is not errors.CitewellError:
            assert cls.code not in codes or codes[cls.code] is cls, cls
            codes.setdefault(cls.code, cls)


def test_bad_input_errors_are_4xx():
    for cls in (
        errors.InvalidInput,
        errors.ParseError,
        errors.UnsupportedFormat,
        errors.KnowledgeBaseNotFound,
        errors.ConfigError,
    ):
        assert 400 <= cls.status < 500
