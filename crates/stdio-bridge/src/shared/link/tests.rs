use super::*;

#[test]
fn only_requests_are_answered_a_batch_with_a_batch() {
    // (frame, the ids answered; `None` for no answer, `Some(vec)` inside a batch answer)
    let cases: &[(&str, Option<Value>)] = &[
        (
            r#"{"jsonrpc":"2.0","id":1,"method":"initialize"}"#,
            Some(json!(1)),
        ),
        (
            r#"{"jsonrpc":"2.0","id":"a","method":"tools/call"}"#,
            Some(json!("a")),
        ),
        (
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
            None,
        ),
        (r#"{"jsonrpc":"2.0","id":null,"method":"ping"}"#, None),
        (r#"{"jsonrpc":"2.0","id":2,"result":{}}"#, None),
        (
            r#"[{"id":1,"method":"ping"},{"method":"n"},{"id":"b","method":"x"}]"#,
            Some(json!([1, "b"])),
        ),
        (r#"[{"method":"n"}]"#, None),
        ("[]", None),
        ("not json", None),
    ];
    for (frame, ids) in cases {
        let answers = unavailable_answers(frame.as_bytes(), "it exited");
        let answers: Option<Value> = answers.map(|a| serde_json::from_slice(&a).unwrap());
        let got = answers.as_ref().map(|a| match a {
            Value::Array(items) => Value::Array(items.iter().map(|i| i["id"].clone()).collect()),
            one => one["id"].clone(),
        });
        assert_eq!(&got, ids, "{frame}");
        let first = answers
            .as_ref()
            .map(|a| if a.is_array() { &a[0] } else { a });
        if let Some(answer) = first {
            assert_eq!(answer["error"]["code"], UPSTREAM_UNREACHABLE, "{frame}");
            assert_eq!(
                answer["error"]["data"]["reason"],
                "shared_server_unavailable"
            );
            assert_eq!(answer["error"]["data"]["upstream"]["message"], "it exited");
        }
    }
}

#[tokio::test]
async fn held_requests_are_answered_until_the_input_ends() {
    let input = concat!(
        r#"{"jsonrpc":"2.0","id":1,"method":"initialize"}"#,
        "\nnot json\n",
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
        "\n",
        r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#,
        "\n",
    );
    let mut output = Vec::new();
    let quiet = Duration::from_secs(60);
    answer_held_requests(input.as_bytes(), &mut output, "gone", quiet).await;
    let answers: Vec<Value> = output
        .split(|b| *b == b'\n')
        .filter(|line| !line.is_empty())
        .map(|line| serde_json::from_slice(line).unwrap())
        .collect();
    let ids: Vec<&Value> = answers.iter().map(|a| &a["id"]).collect();
    assert_eq!(ids, [&json!(1), &json!(2)]);
    assert!(
        answers
            .iter()
            .all(|a| a == &unavailable_answer(&a["id"], "gone"))
    );
}
