from ranklens.core.tokenize import code_tokens, identifiers, split_identifier


def test_identifiers_stay_whole_and_lowercase():
    assert identifiers("def parseHTTPResponse(snake_case): return 42") == [
        "def",
        "parsehttpresponse",
        "snake_case",
        "return",
        "42",
    ]


def test_split_identifier_handles_camel_acronyms_and_digits():
    assert split_identifier("parseHTTPResponse2") == ["parse", "http", "response", "2"]
    assert split_identifier("snake_case_name") == ["snake", "case", "name"]


def test_code_tokens_keep_whole_then_parts():
    assert code_tokens("getUserName") == ["getusername", "get", "user", "name"]
    assert code_tokens("plain") == ["plain"]
    assert code_tokens("__init__") == ["__init__", "init"]


def test_unicode_identifiers_are_kept_whole():
    assert identifiers("größe = café_2") == ["größe", "café_2"]
    assert code_tokens("café") == ["café"]
