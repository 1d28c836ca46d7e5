from ranklens.core.text.tokenize import code_tokens, compounds, identifiers, query_terms, split_identifier


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


def test_a_questions_adjacent_words_join_as_an_identifier_would():
    assert compounds("the JSON object") == [
        "thejson",
        "the_json",
        "jsonobject",
        "json_object",
        "thejsonobject",
        "the_json_object",
    ]
    assert "connectionpoollimits" in compounds("connection pool limits")  # three words at most
    assert not any("abcd" in c for c in compounds("a b c d"))  # too few letters to name anything
    assert compounds("error 404 page") == []  # only plain words


def test_only_the_joined_words_the_index_holds_join_the_query():
    asked = []

    def known(terms):
        asked.append(list(terms))
        return [t == "jsonobject" for t in terms]

    assert query_terms("JSON object", known) == ["json", "object", "jsonobject"]
    assert len(asked) == 1  # the vocabulary is asked once for all
    assert query_terms("jsonObject", known) == code_tokens("jsonObject")  # already whole: nothing added
