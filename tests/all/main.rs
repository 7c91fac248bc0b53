//! hookbox's integration tests: one binary, one module per feature.

mod support;

mod smoke {
    use super::support::*;
    use hookbox::Flow;

    #[test]
    fn a_puppet_answers_the_flow_it_is_told() {
        let stack = stack(&[puppet("a")]);
        assert_flow(once(&stack, &tool_call("a:flow:skip:no", "{}")), Flow::skip("no"));
        assert_flow(once(&stack, &tool_call("shell", "{}")), Flow::Continue);
    }
}
