//! The interaction-query whitelist (PROTOCOL-AGENT §7): hosted web tools are approved (they run
//! on Cursor's servers), questions and plans get an error, mode switches are rejected, the VM
//! setup query is acknowledged without a VM. Anything else is drift: an empty answer would be
//! indistinguishable from approval.

use cursor_proto::agent::v1::{
    self as wire, interaction_query::Query, interaction_response::Result as Answer,
};

use crate::AgentError;

fn approve() -> wire::ApprovalResponse {
    wire::ApprovalResponse {
        result: Some(wire::approval_response::Result::Approved(wire::Approved {})),
    }
}

/// The answer to one query, or drift for a query outside the whitelist.
pub(crate) fn answer(query: Option<Query>, host: &str) -> Result<Answer, AgentError> {
    Ok(match query {
        Some(Query::WebSearchRequestQuery(_)) => Answer::WebSearchRequestResponse(approve()),
        Some(Query::ExaSearchRequestQuery(_)) => Answer::ExaSearchRequestResponse(approve()),
        Some(Query::ExaFetchRequestQuery(_)) => Answer::ExaFetchRequestResponse(approve()),
        Some(Query::WebFetchRequestQuery(_)) => Answer::WebFetchRequestResponse(approve()),
        Some(Query::AskQuestionInteractionQuery(_)) => {
            Answer::AskQuestionInteractionResponse(wire::AskQuestionInteractionResponse {
                result: Some(wire::AskQuestionResult {
                    result: Some(wire::ask_question_result::Result::Error(
                        wire::AskQuestionError {
                            error_message: format!(
                                "{host} cannot ask the user questions mid-turn; ask in your reply and end the turn."
                            ),
                        },
                    )),
                }),
            })
        }
        Some(Query::SwitchModeRequestQuery(_)) => {
            Answer::SwitchModeRequestResponse(wire::ApprovalResponse {
                result: Some(wire::approval_response::Result::Rejected(wire::Rejected {
                    reason: format!("{host} keeps this session in agent mode."),
                })),
            })
        }
        Some(Query::CreatePlanRequestQuery(_)) => {
            Answer::CreatePlanRequestResponse(wire::CreatePlanRequestResponse {
                result: Some(wire::CreatePlanResult {
                    result: Some(wire::create_plan_result::Result::Error(
                        wire::CreatePlanError {
                            error: format!(
                                "{host} does not keep Cursor plans; write the plan in your reply."
                            ),
                        },
                    )),
                }),
            })
        }
        // Acknowledged only: no VM is set up (PROTOCOL-AGENT §7).
        Some(Query::SetupVmEnvironmentArgs(_)) => {
            Answer::SetupVmEnvironmentResult(wire::SetupVmEnvironmentResult {
                result: Some(wire::setup_vm_environment_result::Result::Success(
                    wire::SetupVmEnvironmentSuccess {},
                )),
            })
        }
        Some(
            Query::PrManagementRequestQuery(_)
            | Query::McpAuthRequestQuery(_)
            | Query::GenerateImageRequestQuery(_)
            | Query::ReplaceEnvArgs(_)
            | Query::ConnectScmRequestQuery(_),
        ) => return Err(AgentError::drift("interaction query outside the whitelist")),
        None => return Err(AgentError::drift("unknown interaction query arm")),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosted_tools_are_approved_with_an_empty_message() {
        let answer = answer(
            Some(Query::WebSearchRequestQuery(wire::WebSearchRequestQuery {})),
            "acme",
        );
        assert_eq!(answer, Ok(Answer::WebSearchRequestResponse(approve())));
    }

    #[test]
    fn mode_switch_is_rejected_and_plans_error() {
        assert!(matches!(
            answer(
                Some(Query::SwitchModeRequestQuery(
                    wire::SwitchModeRequestQuery {}
                )),
                "acme"
            ),
            Ok(Answer::SwitchModeRequestResponse(wire::ApprovalResponse {
                result: Some(wire::approval_response::Result::Rejected(_))
            }))
        ));
        assert!(matches!(
            answer(
                Some(Query::CreatePlanRequestQuery(
                    wire::CreatePlanRequestQuery::default()
                )),
                "acme"
            ),
            Ok(Answer::CreatePlanRequestResponse(_))
        ));
    }

    #[test]
    fn unknown_and_unlisted_queries_are_drift() {
        assert!(answer(None, "acme").is_err());
        assert!(
            answer(
                Some(Query::McpAuthRequestQuery(wire::McpAuthRequestQuery {})),
                "acme"
            )
            .is_err()
        );
    }
}
