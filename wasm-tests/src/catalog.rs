//! A deterministic generator of realistic MCP tool definitions (SaaS-style names and
//! descriptions), used by the `gen-catalog` binary, the e2e tests and the benchmarks.
//!
//! The order is stable and prefix-stable: the first N tools of `generate(M)` for M > N are
//! exactly `generate(N)`. Tools are taken round-robin across services (and within a service
//! round-robin across its objects), so any prefix covers many services. Past the base set
//! (415 tools from 44 services), workspace-qualified variants (`eu_github_get_issue`, ...) follow.
//! Randomness comes only from a fixed-seed SplitMix64 keyed by the tool name.

use std::collections::HashSet;
use std::fmt::Write as _;

/// One JSON value, objects keeping insertion order (the output is written in a fixed order).
#[derive(Debug, Clone, PartialEq)]
pub enum Json {
    Str(String),
    Bool(bool),
    Int(i64),
    Arr(Vec<Json>),
    Obj(Vec<(String, Json)>),
}

impl Json {
    fn write(&self, out: &mut String) {
        match self {
            Json::Str(s) => write_str(s, out),
            Json::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
            Json::Int(i) => {
                let _ = write!(out, "{i}");
            }
            Json::Arr(items) => {
                out.push('[');
                for (n, item) in items.iter().enumerate() {
                    if n > 0 {
                        out.push(',');
                    }
                    item.write(out);
                }
                out.push(']');
            }
            Json::Obj(members) => {
                out.push('{');
                for (n, (key, value)) in members.iter().enumerate() {
                    if n > 0 {
                        out.push(',');
                    }
                    write_str(key, out);
                    out.push(':');
                    value.write(out);
                }
                out.push('}');
            }
        }
    }

    /// Compact JSON text.
    pub fn to_json_string(&self) -> String {
        let mut out = String::new();
        self.write(&mut out);
        out
    }
}

fn write_str(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// SplitMix64: a tiny, well-known, fixed-seed PRNG (no OS randomness anywhere).
#[derive(Debug, Clone)]
pub struct SplitMix64(u64);

impl SplitMix64 {
    pub fn new(seed: u64) -> Self {
        Self(seed)
    }

    /// Seeded from a string (FNV-1a) mixed with a fixed project seed.
    pub fn from_key(key: &str) -> Self {
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        for b in key.bytes() {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
        Self(h ^ 0x6d63_702d_746f_6f6c)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform-ish in `0..n` (n > 0; returns 0 for n == 0).
    pub fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            return 0;
        }
        (self.next_u64() % n as u64) as usize
    }

    pub fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        let i = self.below(items.len());
        items.get(i).copied().unwrap_or("")
    }
}

/// One input property.
#[derive(Debug, Clone, Copy)]
struct P {
    name: &'static str,
    ty: &'static str,
    desc: &'static str,
    req: bool,
}

const fn rq(name: &'static str, ty: &'static str, desc: &'static str) -> P {
    P {
        name,
        ty,
        desc,
        req: true,
    }
}

const fn op(name: &'static str, ty: &'static str, desc: &'static str) -> P {
    P {
        name,
        ty,
        desc,
        req: false,
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Read,
    Write,
    Destructive,
}

/// A service-specific action, named `{service}_{name}`.
#[derive(Debug, Clone, Copy)]
struct Sp {
    name: &'static str,
    title: &'static str,
    desc: &'static str,
    with_id: bool,
    props: &'static [P],
    kind: Kind,
}

#[derive(Debug, Clone, Copy)]
enum V {
    List,
    Get,
    Create,
    Update,
    Delete,
    Search,
    S(Sp),
}

const fn sp(
    name: &'static str,
    title: &'static str,
    desc: &'static str,
    with_id: bool,
    props: &'static [P],
    kind: Kind,
) -> V {
    V::S(Sp {
        name,
        title,
        desc,
        with_id,
        props,
        kind,
    })
}

#[derive(Debug, Clone, Copy)]
struct Obj {
    /// snake_case singular, used in names (`issue`, `pull_request`).
    one: &'static str,
    /// snake_case plural (`issues`).
    many: &'static str,
    /// Where it lives, for descriptions (" in a repository"); may be empty.
    place: &'static str,
    scope: &'static [P],
    id: P,
    /// What a full record holds, for descriptions.
    fields: &'static str,
    /// Fields settable on create/update (the first is required on create).
    set: &'static [P],
    verbs: &'static [V],
}

#[derive(Debug, Clone, Copy)]
struct Svc {
    key: &'static str,
    name: &'static str,
    objs: &'static [Obj],
}

use Kind::{Destructive as D, Read as R, Write as W};
use V::{Create, Delete, Get, List, Search, Update};

// ---- shared properties -------------------------------------------------------------------

const LIMIT: P = op(
    "limit",
    "integer",
    "Maximum number of results per page (1-100)",
);
const CURSOR: P = op(
    "cursor",
    "string",
    "Opaque pagination cursor from a previous call",
);
const QUERY: P = rq("query", "string", "Free-text search query");
const NONE: &[P] = &[];

// ---- the services --------------------------------------------------------------------------

const GH_REPO: &[P] = &[
    rq(
        "owner",
        "string",
        "Repository owner (user or organization login)",
    ),
    rq("repo", "string", "Repository name"),
];
const GH_OWNER: &[P] = &[rq("owner", "string", "User or organization login")];

const GITHUB: Svc = Svc {
    key: "github",
    name: "GitHub",
    objs: &[
        Obj {
            one: "issue",
            many: "issues",
            place: " in a repository",
            scope: GH_REPO,
            id: rq("issue_number", "integer", "The issue number"),
            fields: "title, body, state, labels, assignees and timestamps",
            set: &[
                rq("title", "string", "Issue title"),
                op("body", "string", "Issue body in Markdown"),
                op("labels", "array", "Label names to apply"),
            ],
            verbs: &[
                Get,
                List,
                Create,
                sp("close_issue", "Close GitHub issue", "Close an open GitHub issue, optionally marking it as completed or not planned.", true, &[op("state_reason", "string", "Why the issue is closed: completed or not_planned")], W),
                sp("add_issue_comment", "Comment on GitHub issue", "Add a comment to a GitHub issue or pull request conversation. Supports Markdown.", true, &[rq("body", "string", "Comment text in Markdown")], W),
                Update,
                Search,
            ],
        },
        Obj {
            one: "pull_request",
            many: "pull_requests",
            place: " in a repository",
            scope: GH_REPO,
            id: rq("pull_number", "integer", "The pull request number"),
            fields: "title, head and base branches, review state, mergeability and changed files count",
            set: &[
                rq("title", "string", "Pull request title"),
                rq("head", "string", "Branch that contains the changes"),
                op("base", "string", "Branch to merge into (default branch if omitted)"),
            ],
            verbs: &[
                Get,
                List,
                Create,
                sp("merge_pull_request", "Merge GitHub pull request", "Merge an open pull request using a merge commit, squash or rebase. Fails if checks are failing or the branch is out of date.", true, &[op("merge_method", "string", "merge, squash or rebase"), op("commit_title", "string", "Title for the merge commit")], W),
                sp("request_pull_request_review", "Request PR review", "Request reviews on a GitHub pull request from users or teams.", true, &[rq("reviewers", "array", "Logins of users to request a review from")], W),
                Update,
            ],
        },
        Obj {
            one: "repository",
            many: "repositories",
            place: " for a user or organization",
            scope: GH_OWNER,
            id: rq("repo", "string", "Repository name"),
            fields: "description, default branch, visibility, topics, stars and open issue count",
            set: &[
                rq("name", "string", "Repository name"),
                op("private", "boolean", "Whether the repository is private"),
            ],
            verbs: &[
                Get,
                List,
                Create,
                sp("fork_repository", "Fork GitHub repository", "Fork a repository into your account or an organization you belong to.", true, &[op("organization", "string", "Organization to fork into")], W),
            ],
        },
        Obj {
            one: "file",
            many: "files",
            place: " in a repository",
            scope: GH_REPO,
            id: rq("path", "string", "Path of the file in the repository"),
            fields: "content and SHA",
            set: &[],
            verbs: &[
                sp("get_file_contents", "Get file contents", "Get the contents of a file or directory from a GitHub repository at a branch, tag or commit.", true, &[op("ref", "string", "Branch, tag or commit SHA")], R),
                sp("create_or_update_file", "Create or update file", "Create a new file or update an existing file in a GitHub repository with a single commit.", true, &[rq("content", "string", "New file content"), rq("message", "string", "Commit message")], W),
            ],
        },
    ],
};

const GL_PROJECT: &[P] = &[rq("project_id", "string", "Project ID or URL-encoded path")];

const GITLAB: Svc = Svc {
    key: "gitlab",
    name: "GitLab",
    objs: &[
        Obj {
            one: "merge_request",
            many: "merge_requests",
            place: " in a project",
            scope: GL_PROJECT,
            id: rq(
                "merge_request_iid",
                "integer",
                "Merge request IID within the project",
            ),
            fields: "title, source and target branches, approvals and pipeline status",
            set: &[
                rq("title", "string", "Merge request title"),
                rq("source_branch", "string", "Source branch"),
                op("target_branch", "string", "Target branch"),
            ],
            verbs: &[
                Get,
                List,
                Create,
                sp(
                    "approve_merge_request",
                    "Approve GitLab merge request",
                    "Approve a merge request as the current user.",
                    true,
                    NONE,
                    W,
                ),
                sp(
                    "merge_merge_request",
                    "Merge GitLab merge request",
                    "Accept and merge a GitLab merge request once its pipeline succeeds.",
                    true,
                    &[op("squash", "boolean", "Squash commits on merge")],
                    W,
                ),
            ],
        },
        Obj {
            one: "pipeline",
            many: "pipelines",
            place: " of a project",
            scope: GL_PROJECT,
            id: rq("pipeline_id", "integer", "Pipeline ID"),
            fields: "status, ref, jobs and duration",
            set: &[rq("ref", "string", "Branch or tag to run the pipeline for")],
            verbs: &[
                Get,
                List,
                sp(
                    "retry_pipeline",
                    "Retry GitLab pipeline",
                    "Retry the failed jobs of a GitLab CI/CD pipeline.",
                    true,
                    NONE,
                    W,
                ),
                sp(
                    "cancel_pipeline",
                    "Cancel GitLab pipeline",
                    "Cancel a running GitLab CI/CD pipeline and all of its jobs.",
                    true,
                    NONE,
                    D,
                ),
                Create,
            ],
        },
        Obj {
            one: "issue",
            many: "issues",
            place: " in a project",
            scope: GL_PROJECT,
            id: rq("issue_iid", "integer", "Issue IID within the project"),
            fields: "title, description, labels, milestone and assignees",
            set: &[
                rq("title", "string", "Issue title"),
                op("description", "string", "Issue description in Markdown"),
            ],
            verbs: &[Get, List, Create, Update],
        },
    ],
};

const SLACK_CH: &[P] = &[rq("channel", "string", "Channel ID, e.g. C0123456789")];

const SLACK: Svc = Svc {
    key: "slack",
    name: "Slack",
    objs: &[
        Obj {
            one: "message",
            many: "messages",
            place: " in a channel",
            scope: SLACK_CH,
            id: rq("ts", "string", "Message timestamp that identifies it"),
            fields: "text, author, thread and reactions",
            set: &[rq("text", "string", "Message text (mrkdwn)")],
            verbs: &[
                sp("post_message", "Post Slack message", "Post a message to a Slack channel, direct message or group. Supports mrkdwn formatting and Block Kit blocks.", false, &[rq("text", "string", "Message text (mrkdwn)"), op("blocks", "array", "Block Kit blocks")], W),
                List,
                sp("reply_to_thread", "Reply in Slack thread", "Reply to a message thread in a Slack channel, optionally also broadcasting to the channel.", true, &[rq("text", "string", "Reply text"), op("broadcast", "boolean", "Also post the reply to the channel")], W),
                sp("add_reaction", "Add Slack reaction", "Add an emoji reaction to a Slack message.", true, &[rq("emoji", "string", "Emoji name without colons, e.g. thumbsup")], W),
                Search,
                sp("pin_message", "Pin Slack message", "Pin a message to a Slack channel so members can find it later.", true, NONE, W),
                Update,
                Delete,
            ],
        },
        Obj {
            one: "channel",
            many: "channels",
            place: " in the workspace",
            scope: NONE,
            id: rq("channel", "string", "Channel ID"),
            fields: "name, topic, purpose, member count and creation time",
            set: &[
                rq("name", "string", "Channel name (lowercase, no spaces)"),
                op("is_private", "boolean", "Create a private channel"),
            ],
            verbs: &[
                List,
                Create,
                sp("invite_to_channel", "Invite to Slack channel", "Invite one or more users to a Slack channel.", true, &[rq("users", "array", "User IDs to invite")], W),
                sp("archive_channel", "Archive Slack channel", "Archive a Slack channel; it becomes read-only and disappears from the channel list.", true, NONE, D),
                Get,
                sp("set_channel_topic", "Set Slack channel topic", "Set the topic shown at the top of a Slack channel.", true, &[rq("topic", "string", "New topic")], W),
            ],
        },
        Obj {
            one: "user",
            many: "users",
            place: " in the workspace",
            scope: NONE,
            id: rq("user", "string", "User ID"),
            fields: "display name, real name, email, time zone and status",
            set: &[],
            verbs: &[
                List,
                sp("lookup_user_by_email", "Find Slack user by email", "Find a Slack user by their email address.", false, &[rq("email", "string", "Email address")], R),
                Get,
            ],
        },
    ],
};

const JIRA: Svc = Svc {
    key: "jira",
    name: "Jira",
    objs: &[
        Obj {
            one: "ticket",
            many: "tickets",
            place: " in a project",
            scope: NONE,
            id: rq("ticket_key", "string", "Ticket key, e.g. ENG-123"),
            fields: "summary, description, status, priority, assignee and sprint",
            set: &[
                rq("summary", "string", "One-line summary"),
                op("description", "string", "Detailed description"),
                op("priority", "string", "Priority name, e.g. High"),
            ],
            verbs: &[
                Get,
                sp("create_ticket", "Create Jira ticket", "Create a new Jira ticket (issue) in a project with a summary, type and optional description.", false, &[rq("project_key", "string", "Project key, e.g. ENG"), rq("summary", "string", "One-line summary"), op("issue_type", "string", "Bug, Task, Story or Epic")], W),
                sp("transition_ticket", "Transition Jira ticket", "Move a Jira ticket through its workflow, e.g. from To Do to In Progress or Done.", true, &[rq("transition", "string", "Target status or transition name")], W),
                sp("search_tickets", "Search Jira with JQL", "Search Jira tickets with a JQL query and return matching tickets.", false, &[rq("jql", "string", "JQL query, e.g. project = ENG AND status = Open"), LIMIT], R),
                sp("assign_ticket", "Assign Jira ticket", "Assign a Jira ticket to a user, or unassign it.", true, &[rq("assignee", "string", "Account ID of the assignee")], W),
                sp("add_comment", "Comment on Jira ticket", "Add a comment to a Jira ticket.", true, &[rq("body", "string", "Comment text")], W),
                Update,
                sp("link_tickets", "Link Jira tickets", "Create a link between two Jira tickets, such as blocks or relates to.", true, &[rq("other_ticket_key", "string", "Key of the ticket to link to"), op("link_type", "string", "Link type, e.g. Blocks")], W),
                Delete,
            ],
        },
        Obj {
            one: "sprint",
            many: "sprints",
            place: " of a board",
            scope: &[rq("board_id", "integer", "Scrum board ID")],
            id: rq("sprint_id", "integer", "Sprint ID"),
            fields: "name, goal, state and start and end dates",
            set: &[rq("name", "string", "Sprint name"), op("goal", "string", "Sprint goal")],
            verbs: &[
                List,
                Get,
                sp("start_sprint", "Start Jira sprint", "Start a future sprint on a Jira board.", true, NONE, W),
                Create,
            ],
        },
        Obj {
            one: "project",
            many: "projects",
            place: "",
            scope: NONE,
            id: rq("project_key", "string", "Project key"),
            fields: "name, lead, issue types and components",
            set: &[],
            verbs: &[List, Get],
        },
    ],
};

const CONFLUENCE: Svc = Svc {
    key: "confluence",
    name: "Confluence",
    objs: &[
        Obj {
            one: "page",
            many: "pages",
            place: " in a space",
            scope: &[rq("space_key", "string", "Space key")],
            id: rq("page_id", "string", "Page ID"),
            fields: "title, body, version, ancestors and labels",
            set: &[
                rq("title", "string", "Page title"),
                op("body", "string", "Page body in storage format"),
            ],
            verbs: &[Get, Search, Create, Update, List, Delete],
        },
        Obj {
            one: "space",
            many: "spaces",
            place: "",
            scope: NONE,
            id: rq("space_key", "string", "Space key"),
            fields: "name, description and homepage",
            set: &[],
            verbs: &[List, Get],
        },
    ],
};

const LINEAR: Svc = Svc {
    key: "linear",
    name: "Linear",
    objs: &[
        Obj {
            one: "issue",
            many: "issues",
            place: " for a team",
            scope: &[rq("team_id", "string", "Team ID")],
            id: rq("issue_id", "string", "Issue ID or identifier, e.g. ENG-42"),
            fields: "title, description, state, priority, estimate and cycle",
            set: &[
                rq("title", "string", "Issue title"),
                op("priority", "integer", "Priority 0-4"),
            ],
            verbs: &[Get, Create, Search, Update, List],
        },
        Obj {
            one: "project",
            many: "projects",
            place: "",
            scope: NONE,
            id: rq("project_id", "string", "Project ID"),
            fields: "name, status, lead, target date and progress",
            set: &[
                rq("name", "string", "Project name"),
                op("target_date", "string", "Target date (YYYY-MM-DD)"),
            ],
            verbs: &[List, Get, Create],
        },
        Obj {
            one: "cycle",
            many: "cycles",
            place: " of a team",
            scope: &[rq("team_id", "string", "Team ID")],
            id: rq("cycle_id", "string", "Cycle ID"),
            fields: "number, start and end dates and completed scope",
            set: &[],
            verbs: &[List, Get],
        },
    ],
};

const NOTION: Svc = Svc {
    key: "notion",
    name: "Notion",
    objs: &[
        Obj {
            one: "page",
            many: "pages",
            place: "",
            scope: NONE,
            id: rq("page_id", "string", "Page ID"),
            fields: "title, properties, parent and last edited time",
            set: &[rq("parent_id", "string", "Parent page or database ID"), op("properties", "object", "Page properties")],
            verbs: &[
                Get,
                Search,
                Create,
                sp("append_block_children", "Append Notion blocks", "Append content blocks (paragraphs, headings, to-dos) to the end of a Notion page.", true, &[rq("children", "array", "Blocks to append")], W),
                Update,
            ],
        },
        Obj {
            one: "database",
            many: "databases",
            place: "",
            scope: NONE,
            id: rq("database_id", "string", "Database ID"),
            fields: "title, property schema and parent",
            set: &[],
            verbs: &[
                sp("query_database", "Query Notion database", "Query a Notion database with filters and sorts and return matching pages.", true, &[op("filter", "object", "Filter object"), op("sorts", "array", "Sort criteria"), LIMIT], R),
                Get,
            ],
        },
    ],
};

const ASANA: Svc = Svc {
    key: "asana",
    name: "Asana",
    objs: &[
        Obj {
            one: "task",
            many: "tasks",
            place: " in a project",
            scope: &[rq("project_gid", "string", "Project GID")],
            id: rq("task_gid", "string", "Task GID"),
            fields: "name, notes, assignee, due date, completion state and subtasks",
            set: &[
                rq("name", "string", "Task name"),
                op("due_on", "string", "Due date (YYYY-MM-DD)"),
                op("assignee", "string", "Assignee GID or email"),
            ],
            verbs: &[
                Get,
                Create,
                List,
                sp(
                    "complete_task",
                    "Complete Asana task",
                    "Mark an Asana task as complete.",
                    true,
                    NONE,
                    W,
                ),
                Update,
                sp(
                    "add_task_comment",
                    "Comment on Asana task",
                    "Add a comment (story) to an Asana task.",
                    true,
                    &[rq("text", "string", "Comment text")],
                    W,
                ),
                Delete,
            ],
        },
        Obj {
            one: "project",
            many: "projects",
            place: " in a workspace",
            scope: &[rq("workspace_gid", "string", "Workspace GID")],
            id: rq("project_gid", "string", "Project GID"),
            fields: "name, owner, members, sections and status",
            set: &[rq("name", "string", "Project name")],
            verbs: &[List, Get, Create],
        },
    ],
};

const TRELLO: Svc = Svc {
    key: "trello",
    name: "Trello",
    objs: &[
        Obj {
            one: "card",
            many: "cards",
            place: " on a board",
            scope: &[rq("board_id", "string", "Board ID")],
            id: rq("card_id", "string", "Card ID"),
            fields: "name, description, list, labels, members and due date",
            set: &[
                rq("name", "string", "Card title"),
                rq("list_id", "string", "List to put the card in"),
                op("desc", "string", "Card description"),
            ],
            verbs: &[
                Create,
                Get,
                sp(
                    "move_card",
                    "Move Trello card",
                    "Move a Trello card to another list or board, e.g. from Doing to Done.",
                    true,
                    &[rq("list_id", "string", "Destination list ID")],
                    W,
                ),
                List,
                sp(
                    "archive_card",
                    "Archive Trello card",
                    "Archive (close) a Trello card.",
                    true,
                    NONE,
                    D,
                ),
                Update,
            ],
        },
        Obj {
            one: "board",
            many: "boards",
            place: " of the member",
            scope: NONE,
            id: rq("board_id", "string", "Board ID"),
            fields: "name, lists, labels and members",
            set: &[rq("name", "string", "Board name")],
            verbs: &[List, Get, Create],
        },
    ],
};

const STRIPE: Svc = Svc {
    key: "stripe",
    name: "Stripe",
    objs: &[
        Obj {
            one: "charge",
            many: "charges",
            place: "",
            scope: NONE,
            id: rq("charge_id", "string", "Charge ID, e.g. ch_123"),
            fields: "amount, currency, status, customer, payment method and refunds",
            set: &[],
            verbs: &[
                sp("refund_charge", "Refund Stripe charge", "Refund a Stripe charge, fully or partially. Returns the refund object; the money goes back to the original payment method.", true, &[op("amount", "integer", "Amount to refund in the smallest currency unit; full refund if omitted"), op("reason", "string", "duplicate, fraudulent or requested_by_customer")], D),
                Get,
                List,
                sp("capture_charge", "Capture Stripe charge", "Capture an uncaptured (authorized) Stripe charge.", true, &[op("amount", "integer", "Amount to capture; defaults to the full authorized amount")], W),
            ],
        },
        Obj {
            one: "customer",
            many: "customers",
            place: "",
            scope: NONE,
            id: rq("customer_id", "string", "Customer ID, e.g. cus_123"),
            fields: "email, name, default payment method, balance and metadata",
            set: &[rq("email", "string", "Customer email"), op("name", "string", "Full name"), op("metadata", "object", "Key-value metadata")],
            verbs: &[Get, Create, List, Update, Search, Delete],
        },
        Obj {
            one: "subscription",
            many: "subscriptions",
            place: "",
            scope: NONE,
            id: rq("subscription_id", "string", "Subscription ID, e.g. sub_123"),
            fields: "status, items, current period, trial end and cancellation state",
            set: &[rq("customer_id", "string", "Customer ID"), rq("price_id", "string", "Price ID to subscribe to")],
            verbs: &[
                Get,
                Create,
                sp("cancel_subscription", "Cancel Stripe subscription", "Cancel a customer's Stripe subscription immediately or at the end of the current billing period.", true, &[op("at_period_end", "boolean", "Cancel at the end of the period instead of now")], D),
                List,
                Update,
            ],
        },
        Obj {
            one: "invoice",
            many: "invoices",
            place: "",
            scope: NONE,
            id: rq("invoice_id", "string", "Invoice ID, e.g. in_123"),
            fields: "amount due, status, line items, due date and hosted URL",
            set: &[rq("customer_id", "string", "Customer ID"), op("days_until_due", "integer", "Days until the invoice is due")],
            verbs: &[
                Get,
                Create,
                sp("finalize_invoice", "Finalize Stripe invoice", "Finalize a draft Stripe invoice so it can be paid or sent.", true, NONE, W),
                sp("send_invoice", "Send Stripe invoice", "Email a finalized Stripe invoice to the customer.", true, NONE, W),
                List,
                sp("void_invoice", "Void Stripe invoice", "Void a finalized Stripe invoice that should not be paid.", true, NONE, D),
            ],
        },
    ],
};

const SHOPIFY: Svc = Svc {
    key: "shopify",
    name: "Shopify",
    objs: &[
        Obj {
            one: "order",
            many: "orders",
            place: " in the store",
            scope: NONE,
            id: rq("order_id", "integer", "Order ID"),
            fields: "line items, customer, totals, financial and fulfillment status",
            set: &[],
            verbs: &[
                Get,
                List,
                sp("fulfill_order", "Fulfill Shopify order", "Mark the items of a Shopify order as fulfilled, with optional tracking information.", true, &[op("tracking_number", "string", "Carrier tracking number"), op("notify_customer", "boolean", "Email the customer")], W),
                sp("refund_order", "Refund Shopify order", "Refund some or all line items of a Shopify order and optionally restock them.", true, &[op("line_items", "array", "Line items and quantities to refund"), op("restock", "boolean", "Return the items to inventory")], D),
                sp("cancel_order", "Cancel Shopify order", "Cancel a Shopify order that has not been fulfilled.", true, &[op("reason", "string", "customer, fraud, inventory or other")], D),
            ],
        },
        Obj {
            one: "product",
            many: "products",
            place: " in the store",
            scope: NONE,
            id: rq("product_id", "integer", "Product ID"),
            fields: "title, variants, prices, images and inventory",
            set: &[rq("title", "string", "Product title"), op("body_html", "string", "Description HTML"), op("vendor", "string", "Vendor name")],
            verbs: &[Get, List, Create, Update, Delete],
        },
        Obj {
            one: "inventory_level",
            many: "inventory_levels",
            place: " at a location",
            scope: &[rq("location_id", "integer", "Location ID")],
            id: rq("inventory_item_id", "integer", "Inventory item ID"),
            fields: "available quantity",
            set: &[],
            verbs: &[
                sp("adjust_inventory", "Adjust Shopify inventory", "Adjust the available quantity of an inventory item at a location by a relative amount.", true, &[rq("delta", "integer", "Quantity change, may be negative")], W),
                List,
            ],
        },
    ],
};

const HUBSPOT: Svc = Svc {
    key: "hubspot",
    name: "HubSpot",
    objs: &[
        Obj {
            one: "contact",
            many: "contacts",
            place: " in the CRM",
            scope: NONE,
            id: rq("contact_id", "string", "Contact ID"),
            fields: "email, name, company, lifecycle stage and owner",
            set: &[
                rq("email", "string", "Email address"),
                op("firstname", "string", "First name"),
                op("lastname", "string", "Last name"),
            ],
            verbs: &[Get, Create, Search, Update, List, Delete],
        },
        Obj {
            one: "deal",
            many: "deals",
            place: " in the CRM",
            scope: NONE,
            id: rq("deal_id", "string", "Deal ID"),
            fields: "name, amount, pipeline, stage, close date and associated contacts",
            set: &[
                rq("dealname", "string", "Deal name"),
                op("amount", "number", "Deal amount"),
                op("pipeline", "string", "Pipeline ID"),
            ],
            verbs: &[
                Get,
                Create,
                sp(
                    "move_deal_stage",
                    "Move HubSpot deal stage",
                    "Move a HubSpot deal to another stage of its pipeline, e.g. to closed won.",
                    true,
                    &[rq("dealstage", "string", "Target stage ID")],
                    W,
                ),
                List,
            ],
        },
        Obj {
            one: "note",
            many: "notes",
            place: "",
            scope: NONE,
            id: rq("note_id", "string", "Note ID"),
            fields: "body, owner and associations",
            set: &[
                rq("body", "string", "Note text"),
                op("contact_id", "string", "Contact to associate with"),
            ],
            verbs: &[Create, Get],
        },
    ],
};

const SALESFORCE: Svc = Svc {
    key: "salesforce",
    name: "Salesforce",
    objs: &[
        Obj {
            one: "opportunity",
            many: "opportunities",
            place: "",
            scope: NONE,
            id: rq("opportunity_id", "string", "Opportunity record ID"),
            fields: "name, account, amount, stage, probability and close date",
            set: &[rq("name", "string", "Opportunity name"), rq("stage_name", "string", "Sales stage"), op("amount", "number", "Amount")],
            verbs: &[Get, Create, Update, List],
        },
        Obj {
            one: "lead",
            many: "leads",
            place: "",
            scope: NONE,
            id: rq("lead_id", "string", "Lead record ID"),
            fields: "name, company, email, status and source",
            set: &[rq("last_name", "string", "Last name"), rq("company", "string", "Company"), op("email", "string", "Email")],
            verbs: &[
                Get,
                Create,
                sp("convert_lead", "Convert Salesforce lead", "Convert a Salesforce lead into an account, contact and optionally an opportunity.", true, &[op("create_opportunity", "boolean", "Also create an opportunity")], W),
                Update,
            ],
        },
        Obj {
            one: "record",
            many: "records",
            place: "",
            scope: NONE,
            id: rq("record_id", "string", "Record ID"),
            fields: "all fields",
            set: &[],
            verbs: &[sp("run_soql_query", "Run SOQL query", "Run a SOQL query against Salesforce and return the matching records.", false, &[rq("soql", "string", "SOQL query, e.g. SELECT Id, Name FROM Account LIMIT 10")], R)],
        },
        Obj {
            one: "case",
            many: "cases",
            place: "",
            scope: NONE,
            id: rq("case_id", "string", "Case record ID"),
            fields: "subject, status, priority, account and owner",
            set: &[rq("subject", "string", "Case subject"), op("priority", "string", "Low, Medium or High")],
            verbs: &[Create, Get, List, Update],
        },
    ],
};

const ZENDESK: Svc = Svc {
    key: "zendesk",
    name: "Zendesk",
    objs: &[
        Obj {
            one: "ticket",
            many: "tickets",
            place: "",
            scope: NONE,
            id: rq("ticket_id", "integer", "Ticket ID"),
            fields: "subject, requester, status, priority, tags and comments",
            set: &[
                rq("subject", "string", "Ticket subject"),
                rq("comment", "string", "First comment body"),
                op("priority", "string", "low, normal, high or urgent"),
            ],
            verbs: &[
                Get,
                Create,
                sp(
                    "add_ticket_comment",
                    "Reply to Zendesk ticket",
                    "Add a public reply or an internal note to a Zendesk support ticket.",
                    true,
                    &[
                        rq("body", "string", "Comment text"),
                        op("public", "boolean", "Visible to the requester"),
                    ],
                    W,
                ),
                Search,
                Update,
                sp(
                    "merge_tickets",
                    "Merge Zendesk tickets",
                    "Merge one or more Zendesk tickets into a target ticket.",
                    true,
                    &[rq(
                        "source_ids",
                        "array",
                        "IDs of tickets to merge into this one",
                    )],
                    D,
                ),
                List,
            ],
        },
        Obj {
            one: "macro",
            many: "macros",
            place: "",
            scope: NONE,
            id: rq("macro_id", "integer", "Macro ID"),
            fields: "title, actions and restrictions",
            set: &[],
            verbs: &[
                List,
                sp(
                    "apply_macro",
                    "Apply Zendesk macro",
                    "Apply a Zendesk macro to a ticket to set fields and add a canned reply.",
                    true,
                    &[rq("ticket_id", "integer", "Ticket to apply the macro to")],
                    W,
                ),
            ],
        },
        Obj {
            one: "user",
            many: "users",
            place: "",
            scope: NONE,
            id: rq("user_id", "integer", "User ID"),
            fields: "name, email, role and organization",
            set: &[
                rq("name", "string", "Full name"),
                rq("email", "string", "Email address"),
            ],
            verbs: &[Get, Search, Create],
        },
    ],
};

const INTERCOM: Svc = Svc {
    key: "intercom",
    name: "Intercom",
    objs: &[
        Obj {
            one: "conversation",
            many: "conversations",
            place: "",
            scope: NONE,
            id: rq("conversation_id", "string", "Conversation ID"),
            fields: "parts, state, assignee, tags and customer",
            set: &[],
            verbs: &[
                Get,
                sp("reply_to_conversation", "Reply to Intercom conversation", "Reply to an Intercom conversation as an admin, either as a customer-visible message or an internal note.", true, &[rq("body", "string", "Reply body"), op("message_type", "string", "comment or note")], W),
                List,
                sp("close_conversation", "Close Intercom conversation", "Close an open Intercom conversation.", true, NONE, W),
                sp("assign_conversation", "Assign Intercom conversation", "Assign an Intercom conversation to a teammate or team inbox.", true, &[rq("assignee_id", "string", "Admin or team ID")], W),
                Search,
            ],
        },
        Obj {
            one: "contact",
            many: "contacts",
            place: "",
            scope: NONE,
            id: rq("contact_id", "string", "Contact ID"),
            fields: "email, name, role, tags and custom attributes",
            set: &[rq("email", "string", "Email"), op("name", "string", "Name")],
            verbs: &[Get, Create, Search, Update],
        },
        Obj {
            one: "article",
            many: "articles",
            place: " in the help center",
            scope: NONE,
            id: rq("article_id", "string", "Article ID"),
            fields: "title, body, state and author",
            set: &[rq("title", "string", "Article title"), op("body", "string", "HTML body")],
            verbs: &[List, Get, Create],
        },
    ],
};

const GCAL_CAL: &[P] = &[rq(
    "calendar_id",
    "string",
    "Calendar ID; primary for the user's main calendar",
)];

const GCAL: Svc = Svc {
    key: "gcal",
    name: "Google Calendar",
    objs: &[
        Obj {
            one: "event",
            many: "events",
            place: " in a calendar",
            scope: GCAL_CAL,
            id: rq("event_id", "string", "Event ID"),
            fields: "title, start and end time, attendees, location and conference link",
            set: &[rq("summary", "string", "Event title"), rq("start", "string", "Start time (RFC 3339)"), op("end", "string", "End time (RFC 3339)")],
            verbs: &[
                List,
                Create,
                Get,
                sp("find_free_time", "Find free time", "Find time slots when all given people are free in Google Calendar within a time range.", false, &[rq("attendees", "array", "Email addresses"), rq("time_min", "string", "Range start (RFC 3339)"), rq("time_max", "string", "Range end (RFC 3339)"), op("duration_minutes", "integer", "Meeting length")], R),
                Update,
                Delete,
                sp("respond_to_event", "RSVP to calendar event", "Accept, decline or tentatively accept a Google Calendar invitation.", true, &[rq("response", "string", "accepted, declined or tentative")], W),
            ],
        },
        Obj {
            one: "calendar",
            many: "calendars",
            place: " of the user",
            scope: NONE,
            id: rq("calendar_id", "string", "Calendar ID"),
            fields: "summary, time zone and access role",
            set: &[],
            verbs: &[List, Get],
        },
    ],
};

const GMAIL: Svc = Svc {
    key: "gmail",
    name: "Gmail",
    objs: &[
        Obj {
            one: "message",
            many: "messages",
            place: " in the mailbox",
            scope: NONE,
            id: rq("message_id", "string", "Message ID"),
            fields: "headers, snippet, body, labels and attachments",
            set: &[],
            verbs: &[
                sp("send_email", "Send email", "Send an email from the user's Gmail account to one or more recipients, with optional CC, BCC and HTML body.", false, &[rq("to", "array", "Recipient addresses"), rq("subject", "string", "Subject line"), rq("body", "string", "Message body"), op("cc", "array", "CC addresses")], W),
                Search,
                Get,
                sp("reply_to_email", "Reply to email", "Reply to an email in its Gmail thread, quoting the original message.", true, &[rq("body", "string", "Reply text"), op("reply_all", "boolean", "Reply to all recipients")], W),
                List,
                sp("add_label_to_message", "Label Gmail message", "Add or remove Gmail labels on a message, e.g. to archive or star it.", true, &[op("add_labels", "array", "Label IDs to add"), op("remove_labels", "array", "Label IDs to remove")], W),
                sp("trash_message", "Trash Gmail message", "Move a Gmail message to the trash.", true, NONE, D),
            ],
        },
        Obj {
            one: "draft",
            many: "drafts",
            place: "",
            scope: NONE,
            id: rq("draft_id", "string", "Draft ID"),
            fields: "recipients, subject and body",
            set: &[rq("to", "array", "Recipient addresses"), rq("subject", "string", "Subject"), op("body", "string", "Body")],
            verbs: &[
                Create,
                List,
                sp("send_draft", "Send Gmail draft", "Send an existing Gmail draft.", true, NONE, W),
            ],
        },
        Obj {
            one: "label",
            many: "labels",
            place: "",
            scope: NONE,
            id: rq("label_id", "string", "Label ID"),
            fields: "name, type and message counts",
            set: &[rq("name", "string", "Label name")],
            verbs: &[List, Create],
        },
    ],
};

const GDRIVE: Svc = Svc {
    key: "gdrive",
    name: "Google Drive",
    objs: &[
        Obj {
            one: "file",
            many: "files",
            place: " in Drive",
            scope: NONE,
            id: rq("file_id", "string", "File ID"),
            fields: "name, MIME type, owners, size, parents and sharing settings",
            set: &[],
            verbs: &[
                Search,
                Get,
                sp("upload_file", "Upload to Google Drive", "Upload a file to Google Drive, optionally into a folder.", false, &[rq("name", "string", "File name"), rq("content_base64", "string", "File content, base64"), op("folder_id", "string", "Parent folder ID")], W),
                sp("share_file", "Share Drive file", "Share a Google Drive file or folder with a user, group or anyone with the link.", true, &[rq("email", "string", "Who to share with"), rq("role", "string", "reader, commenter or writer")], W),
                List,
                sp("move_file", "Move Drive file", "Move a Google Drive file into another folder.", true, &[rq("folder_id", "string", "Destination folder ID")], W),
                Delete,
                sp("export_file", "Export Google Doc", "Export a Google Docs, Sheets or Slides file to PDF, DOCX or another format.", true, &[rq("mime_type", "string", "Target MIME type, e.g. application/pdf")], R),
            ],
        },
        Obj {
            one: "folder",
            many: "folders",
            place: "",
            scope: NONE,
            id: rq("folder_id", "string", "Folder ID"),
            fields: "name and parents",
            set: &[rq("name", "string", "Folder name"), op("parent_id", "string", "Parent folder ID")],
            verbs: &[Create],
        },
    ],
};

const GSHEETS_SHEET: &[P] = &[rq("spreadsheet_id", "string", "Spreadsheet ID")];

const GSHEETS: Svc = Svc {
    key: "gsheets",
    name: "Google Sheets",
    objs: &[
        Obj {
            one: "range",
            many: "ranges",
            place: "",
            scope: GSHEETS_SHEET,
            id: rq("range", "string", "A1 notation range, e.g. Sheet1!A1:D10"),
            fields: "cell values",
            set: &[],
            verbs: &[
                sp("read_range", "Read sheet range", "Read the cell values of a range in a Google Sheets spreadsheet.", true, NONE, R),
                sp("append_rows", "Append rows to sheet", "Append rows of values after the last row of a table in a Google Sheets spreadsheet.", true, &[rq("values", "array", "Rows, each an array of cell values")], W),
                sp("update_range", "Write sheet range", "Overwrite the values of a range in a Google Sheets spreadsheet.", true, &[rq("values", "array", "Rows, each an array of cell values")], W),
                sp("clear_range", "Clear sheet range", "Clear all values in a range of a Google Sheets spreadsheet, keeping formatting.", true, NONE, D),
            ],
        },
        Obj {
            one: "spreadsheet",
            many: "spreadsheets",
            place: "",
            scope: NONE,
            id: rq("spreadsheet_id", "string", "Spreadsheet ID"),
            fields: "title, sheets and named ranges",
            set: &[rq("title", "string", "Spreadsheet title")],
            verbs: &[Get, Create],
        },
    ],
};

const DROPBOX: Svc = Svc {
    key: "dropbox",
    name: "Dropbox",
    objs: &[Obj {
        one: "file",
        many: "files",
        place: "",
        scope: NONE,
        id: rq("path", "string", "Path in Dropbox, e.g. /Reports/q3.pdf"),
        fields: "name, size, revision and modified time",
        set: &[],
        verbs: &[
            sp(
                "list_folder",
                "List Dropbox folder",
                "List the files and folders inside a Dropbox folder.",
                false,
                &[
                    rq("path", "string", "Folder path; empty string for root"),
                    op("recursive", "boolean", "Include all subfolders"),
                ],
                R,
            ),
            sp(
                "upload_file",
                "Upload to Dropbox",
                "Upload a file to a path in Dropbox, overwriting or renaming on conflict.",
                true,
                &[
                    rq("content_base64", "string", "File content, base64"),
                    op("mode", "string", "add or overwrite"),
                ],
                W,
            ),
            sp(
                "download_file",
                "Download from Dropbox",
                "Download a file's content from Dropbox.",
                true,
                NONE,
                R,
            ),
            sp(
                "create_shared_link",
                "Create Dropbox shared link",
                "Create a shareable link to a Dropbox file or folder.",
                true,
                &[op("expires", "string", "Expiry time (RFC 3339)")],
                W,
            ),
            sp(
                "move_file",
                "Move Dropbox file",
                "Move or rename a file or folder in Dropbox.",
                true,
                &[rq("to_path", "string", "Destination path")],
                W,
            ),
            Search,
            Delete,
        ],
    }],
};

const TWILIO: Svc = Svc {
    key: "twilio",
    name: "Twilio",
    objs: &[
        Obj {
            one: "message",
            many: "messages",
            place: "",
            scope: NONE,
            id: rq("message_sid", "string", "Message SID"),
            fields: "from, to, body, status and price",
            set: &[],
            verbs: &[
                sp(
                    "send_sms",
                    "Send SMS",
                    "Send an SMS or MMS text message to a phone number through Twilio.",
                    false,
                    &[
                        rq("to", "string", "Destination phone number (E.164)"),
                        rq("body", "string", "Message text"),
                        op("from", "string", "Twilio number to send from"),
                    ],
                    W,
                ),
                Get,
                List,
            ],
        },
        Obj {
            one: "call",
            many: "calls",
            place: "",
            scope: NONE,
            id: rq("call_sid", "string", "Call SID"),
            fields: "from, to, status, duration and recording",
            set: &[],
            verbs: &[
                sp(
                    "make_call",
                    "Place phone call",
                    "Place an outbound phone call with Twilio that plays a message or runs TwiML.",
                    false,
                    &[
                        rq("to", "string", "Destination phone number (E.164)"),
                        rq("twiml", "string", "TwiML instructions"),
                    ],
                    W,
                ),
                Get,
                List,
            ],
        },
        Obj {
            one: "phone_number",
            many: "phone_numbers",
            place: " owned by the account",
            scope: NONE,
            id: rq("phone_number_sid", "string", "Phone number SID"),
            fields: "number, capabilities and webhooks",
            set: &[],
            verbs: &[List],
        },
    ],
};

const SENDGRID: Svc = Svc {
    key: "sendgrid",
    name: "SendGrid",
    objs: &[
        Obj {
            one: "mail",
            many: "mails",
            place: "",
            scope: NONE,
            id: rq("message_id", "string", "Message ID"),
            fields: "delivery events",
            set: &[],
            verbs: &[sp(
                "send_mail",
                "Send transactional email",
                "Send a transactional email through SendGrid, optionally from a dynamic template.",
                false,
                &[
                    rq("to", "string", "Recipient address"),
                    rq("from", "string", "Verified sender"),
                    op("template_id", "string", "Dynamic template ID"),
                    op("dynamic_data", "object", "Template variables"),
                ],
                W,
            )],
        },
        Obj {
            one: "template",
            many: "templates",
            place: "",
            scope: NONE,
            id: rq("template_id", "string", "Template ID"),
            fields: "name, versions and generation",
            set: &[rq("name", "string", "Template name")],
            verbs: &[List, Get, Create],
        },
        Obj {
            one: "contact",
            many: "contacts",
            place: " in marketing lists",
            scope: NONE,
            id: rq("contact_id", "string", "Contact ID"),
            fields: "email, names and list memberships",
            set: &[],
            verbs: &[sp(
                "upsert_contacts",
                "Add SendGrid contacts",
                "Add or update marketing contacts in SendGrid, optionally into lists.",
                false,
                &[
                    rq("contacts", "array", "Contacts with email and fields"),
                    op("list_ids", "array", "Lists to add them to"),
                ],
                W,
            )],
        },
    ],
};

const MAILCHIMP: Svc = Svc {
    key: "mailchimp",
    name: "Mailchimp",
    objs: &[
        Obj {
            one: "campaign",
            many: "campaigns",
            place: "",
            scope: NONE,
            id: rq("campaign_id", "string", "Campaign ID"),
            fields: "subject, audience, status, send time and report summary",
            set: &[
                rq("list_id", "string", "Audience ID"),
                rq("subject_line", "string", "Email subject"),
            ],
            verbs: &[
                List,
                Create,
                Get,
                sp(
                    "send_campaign",
                    "Send Mailchimp campaign",
                    "Send a Mailchimp email campaign to its audience now.",
                    true,
                    NONE,
                    W,
                ),
                sp(
                    "schedule_campaign",
                    "Schedule Mailchimp campaign",
                    "Schedule a Mailchimp campaign to be sent at a later time.",
                    true,
                    &[rq("schedule_time", "string", "Send time (RFC 3339, UTC)")],
                    W,
                ),
            ],
        },
        Obj {
            one: "member",
            many: "members",
            place: " of an audience",
            scope: &[rq("list_id", "string", "Audience ID")],
            id: rq("email", "string", "Member email address"),
            fields: "status, merge fields and tags",
            set: &[
                rq("email", "string", "Email address"),
                op("merge_fields", "object", "Merge fields such as FNAME"),
            ],
            verbs: &[
                sp(
                    "add_member",
                    "Add Mailchimp subscriber",
                    "Add a subscriber to a Mailchimp audience (list).",
                    false,
                    &[
                        rq("list_id", "string", "Audience ID"),
                        rq("email", "string", "Email address"),
                        op("status", "string", "subscribed or pending"),
                    ],
                    W,
                ),
                Get,
                sp(
                    "unsubscribe_member",
                    "Unsubscribe Mailchimp member",
                    "Unsubscribe a member from a Mailchimp audience.",
                    true,
                    NONE,
                    W,
                ),
                List,
            ],
        },
    ],
};

const PAGERDUTY: Svc = Svc {
    key: "pagerduty",
    name: "PagerDuty",
    objs: &[
        Obj {
            one: "incident",
            many: "incidents",
            place: "",
            scope: NONE,
            id: rq("incident_id", "string", "Incident ID"),
            fields: "title, status, urgency, service, assignees and timeline",
            set: &[
                rq("title", "string", "Incident title"),
                rq("service_id", "string", "Affected service"),
                op("urgency", "string", "high or low"),
            ],
            verbs: &[
                List,
                Get,
                sp(
                    "acknowledge_incident",
                    "Acknowledge incident",
                    "Acknowledge a triggered PagerDuty incident to stop escalation.",
                    true,
                    NONE,
                    W,
                ),
                sp(
                    "resolve_incident",
                    "Resolve incident",
                    "Resolve a PagerDuty incident.",
                    true,
                    &[op("resolution", "string", "Resolution note")],
                    W,
                ),
                Create,
                sp(
                    "add_incident_note",
                    "Add incident note",
                    "Add a note to a PagerDuty incident's timeline.",
                    true,
                    &[rq("content", "string", "Note text")],
                    W,
                ),
            ],
        },
        Obj {
            one: "oncall",
            many: "oncalls",
            place: "",
            scope: NONE,
            id: rq("schedule_id", "string", "Schedule ID"),
            fields: "user, schedule and escalation level",
            set: &[],
            verbs: &[sp(
                "list_oncalls",
                "Who is on call",
                "List who is currently on call in PagerDuty, per schedule and escalation policy.",
                false,
                &[
                    op("schedule_ids", "array", "Only these schedules"),
                    op("since", "string", "Start of the window (RFC 3339)"),
                ],
                R,
            )],
        },
        Obj {
            one: "service",
            many: "services",
            place: "",
            scope: NONE,
            id: rq("service_id", "string", "Service ID"),
            fields: "name, status, escalation policy and integrations",
            set: &[],
            verbs: &[List, Get],
        },
    ],
};

const DATADOG: Svc = Svc {
    key: "datadog",
    name: "Datadog",
    objs: &[
        Obj {
            one: "monitor",
            many: "monitors",
            place: "",
            scope: NONE,
            id: rq("monitor_id", "integer", "Monitor ID"),
            fields: "name, query, thresholds, state and notification message",
            set: &[rq("name", "string", "Monitor name"), rq("query", "string", "Monitor query"), op("message", "string", "Notification message")],
            verbs: &[
                List,
                Get,
                Create,
                sp("mute_monitor", "Mute Datadog monitor", "Mute a Datadog monitor so it stops notifying, optionally until a given time.", true, &[op("end", "integer", "Unix time when the mute ends")], W),
                Update,
                Delete,
            ],
        },
        Obj {
            one: "metric",
            many: "metrics",
            place: "",
            scope: NONE,
            id: rq("metric", "string", "Metric name"),
            fields: "type, unit and tags",
            set: &[],
            verbs: &[sp("query_metrics", "Query Datadog metrics", "Query Datadog timeseries metrics over a time range, e.g. avg:system.cpu.user{env:prod}.", false, &[rq("query", "string", "Metrics query"), rq("from", "integer", "Start (Unix seconds)"), rq("to", "integer", "End (Unix seconds)")], R)],
        },
        Obj {
            one: "event",
            many: "events",
            place: "",
            scope: NONE,
            id: rq("event_id", "integer", "Event ID"),
            fields: "title, text, tags and priority",
            set: &[],
            verbs: &[
                sp("post_event", "Post Datadog event", "Post an event to the Datadog event stream, e.g. a deploy marker.", false, &[rq("title", "string", "Event title"), rq("text", "string", "Event text"), op("tags", "array", "Tags")], W),
                List,
            ],
        },
        Obj {
            one: "dashboard",
            many: "dashboards",
            place: "",
            scope: NONE,
            id: rq("dashboard_id", "string", "Dashboard ID"),
            fields: "title, widgets and template variables",
            set: &[],
            verbs: &[List, Get],
        },
    ],
};

const SENTRY_ORG: &[P] = &[rq("organization_slug", "string", "Organization slug")];

const SENTRY: Svc = Svc {
    key: "sentry",
    name: "Sentry",
    objs: &[
        Obj {
            one: "issue",
            many: "issues",
            place: " in an organization",
            scope: SENTRY_ORG,
            id: rq("issue_id", "string", "Issue ID"),
            fields: "title, culprit, event count, users affected, first and last seen",
            set: &[],
            verbs: &[
                List,
                Get,
                sp("resolve_issue", "Resolve Sentry issue", "Mark a Sentry error issue as resolved, optionally in the next release.", true, &[op("in_next_release", "boolean", "Resolve in the next release")], W),
                sp("assign_issue", "Assign Sentry issue", "Assign a Sentry issue to a user or team.", true, &[rq("assignee", "string", "User email or team:slug")], W),
                sp("get_latest_event", "Latest Sentry event", "Get the latest event of a Sentry issue, with the stack trace, breadcrumbs and tags.", true, NONE, R),
            ],
        },
        Obj {
            one: "release",
            many: "releases",
            place: " in an organization",
            scope: SENTRY_ORG,
            id: rq("version", "string", "Release version"),
            fields: "version, projects, commits and deploys",
            set: &[rq("version", "string", "Release version"), rq("projects", "array", "Project slugs")],
            verbs: &[Create, List, Get],
        },
    ],
};

const S3: Svc = Svc {
    key: "s3",
    name: "Amazon S3",
    objs: &[
        Obj {
            one: "object",
            many: "objects",
            place: " in a bucket",
            scope: &[rq("bucket", "string", "Bucket name")],
            id: rq("key", "string", "Object key"),
            fields: "size, ETag, content type, storage class and last modified time",
            set: &[],
            verbs: &[
                List,
                sp(
                    "get_object",
                    "Get S3 object",
                    "Download an object from an Amazon S3 bucket.",
                    true,
                    &[op("range", "string", "Byte range, e.g. bytes=0-1023")],
                    R,
                ),
                sp(
                    "put_object",
                    "Put S3 object",
                    "Upload an object to an Amazon S3 bucket.",
                    true,
                    &[
                        rq("body_base64", "string", "Object content, base64"),
                        op("content_type", "string", "MIME type"),
                    ],
                    W,
                ),
                sp(
                    "generate_presigned_url",
                    "Presign S3 URL",
                    "Generate a time-limited presigned URL to download or upload an S3 object.",
                    true,
                    &[op("expires_in", "integer", "Validity in seconds")],
                    R,
                ),
                sp(
                    "copy_object",
                    "Copy S3 object",
                    "Copy an object within or between Amazon S3 buckets.",
                    true,
                    &[
                        rq("destination_bucket", "string", "Destination bucket"),
                        rq("destination_key", "string", "Destination key"),
                    ],
                    W,
                ),
                sp(
                    "delete_object",
                    "Delete S3 object",
                    "Delete an object from an Amazon S3 bucket.",
                    true,
                    NONE,
                    D,
                ),
            ],
        },
        Obj {
            one: "bucket",
            many: "buckets",
            place: "",
            scope: NONE,
            id: rq("bucket", "string", "Bucket name"),
            fields: "name, region and creation date",
            set: &[
                rq("bucket", "string", "Bucket name"),
                op("region", "string", "AWS region"),
            ],
            verbs: &[List, Create],
        },
    ],
};

const CF_ZONE: &[P] = &[rq("zone_id", "string", "Zone ID")];

const CLOUDFLARE: Svc = Svc {
    key: "cloudflare",
    name: "Cloudflare",
    objs: &[
        Obj {
            one: "dns_record",
            many: "dns_records",
            place: " in a zone",
            scope: CF_ZONE,
            id: rq("record_id", "string", "DNS record ID"),
            fields: "type, name, content, TTL and proxy status",
            set: &[rq("type", "string", "Record type, e.g. A, CNAME, TXT"), rq("name", "string", "Record name"), rq("content", "string", "Record value")],
            verbs: &[List, Create, Update, Delete, Get],
        },
        Obj {
            one: "cache",
            many: "caches",
            place: "",
            scope: CF_ZONE,
            id: rq("zone_id", "string", "Zone ID"),
            fields: "",
            set: &[],
            verbs: &[sp("purge_cache", "Purge Cloudflare cache", "Purge cached content for a Cloudflare zone, everything or only given URLs or tags.", false, &[op("files", "array", "URLs to purge"), op("purge_everything", "boolean", "Purge all cached content")], D)],
        },
        Obj {
            one: "zone",
            many: "zones",
            place: " in the account",
            scope: NONE,
            id: rq("zone_id", "string", "Zone ID"),
            fields: "name, status, plan and name servers",
            set: &[],
            verbs: &[List, Get],
        },
    ],
};

const VERCEL: Svc = Svc {
    key: "vercel",
    name: "Vercel",
    objs: &[
        Obj {
            one: "deployment",
            many: "deployments",
            place: " of a project",
            scope: &[rq("project_id", "string", "Project ID or name")],
            id: rq("deployment_id", "string", "Deployment ID or URL"),
            fields: "URL, state, target, git commit and build logs link",
            set: &[],
            verbs: &[
                List,
                Get,
                sp("redeploy", "Redeploy on Vercel", "Redeploy an existing Vercel deployment, e.g. to rebuild with new environment variables.", true, &[op("target", "string", "production or preview")], W),
                sp("promote_deployment", "Promote Vercel deployment", "Promote a preview deployment to production on Vercel.", true, NONE, W),
                sp("cancel_deployment", "Cancel Vercel deployment", "Cancel a Vercel deployment that is still building.", true, NONE, D),
            ],
        },
        Obj {
            one: "env_var",
            many: "env_vars",
            place: " of a project",
            scope: &[rq("project_id", "string", "Project ID or name")],
            id: rq("env_id", "string", "Environment variable ID"),
            fields: "key, targets and type",
            set: &[rq("key", "string", "Variable name"), rq("value", "string", "Variable value"), op("target", "array", "production, preview, development")],
            verbs: &[List, Create, Delete],
        },
        Obj {
            one: "project",
            many: "projects",
            place: "",
            scope: NONE,
            id: rq("project_id", "string", "Project ID or name"),
            fields: "name, framework, git repository and domains",
            set: &[],
            verbs: &[List, Get],
        },
    ],
};

const FIGMA: Svc = Svc {
    key: "figma",
    name: "Figma",
    objs: &[
        Obj {
            one: "file",
            many: "files",
            place: "",
            scope: NONE,
            id: rq("file_key", "string", "File key from the Figma URL"),
            fields: "document tree, components, styles and last modified time",
            set: &[],
            verbs: &[
                Get,
                sp(
                    "export_images",
                    "Export Figma images",
                    "Render Figma nodes as PNG, SVG or PDF images and return their URLs.",
                    true,
                    &[
                        rq("node_ids", "array", "Node IDs to render"),
                        op("format", "string", "png, jpg, svg or pdf"),
                    ],
                    R,
                ),
            ],
        },
        Obj {
            one: "comment",
            many: "comments",
            place: " on a file",
            scope: &[rq("file_key", "string", "File key")],
            id: rq("comment_id", "string", "Comment ID"),
            fields: "message, author and position",
            set: &[rq("message", "string", "Comment text")],
            verbs: &[List, Create, Delete],
        },
        Obj {
            one: "component",
            many: "components",
            place: " in a team library",
            scope: &[rq("team_id", "string", "Team ID")],
            id: rq("component_key", "string", "Component key"),
            fields: "name, description and thumbnail",
            set: &[],
            verbs: &[List, Get],
        },
    ],
};

const AT_TABLE: &[P] = &[
    rq("base_id", "string", "Base ID"),
    rq("table", "string", "Table name or ID"),
];

const AIRTABLE: Svc = Svc {
    key: "airtable",
    name: "Airtable",
    objs: &[
        Obj {
            one: "record",
            many: "records",
            place: " in a table",
            scope: AT_TABLE,
            id: rq("record_id", "string", "Record ID"),
            fields: "field values and creation time",
            set: &[rq("fields", "object", "Field values by field name")],
            verbs: &[List, Get, Create, Update, Delete],
        },
        Obj {
            one: "base",
            many: "bases",
            place: "",
            scope: NONE,
            id: rq("base_id", "string", "Base ID"),
            fields: "name, tables and permission level",
            set: &[],
            verbs: &[List, Get],
        },
    ],
};

const ZOOM: Svc = Svc {
    key: "zoom",
    name: "Zoom",
    objs: &[
        Obj {
            one: "meeting",
            many: "meetings",
            place: " of a user",
            scope: NONE,
            id: rq("meeting_id", "integer", "Meeting ID"),
            fields: "topic, start time, duration, join URL and settings",
            set: &[
                rq("topic", "string", "Meeting topic"),
                op("start_time", "string", "Start time (RFC 3339)"),
                op("duration", "integer", "Duration in minutes"),
            ],
            verbs: &[Create, List, Get, Update, Delete],
        },
        Obj {
            one: "recording",
            many: "recordings",
            place: " of a user",
            scope: NONE,
            id: rq("meeting_id", "integer", "Meeting ID"),
            fields: "files, duration and download URLs",
            set: &[],
            verbs: &[List, Get],
        },
    ],
};

const TEAMS_TEAM: &[P] = &[rq("team_id", "string", "Team ID")];

const TEAMS: Svc = Svc {
    key: "teams",
    name: "Microsoft Teams",
    objs: &[
        Obj {
            one: "channel_message",
            many: "channel_messages",
            place: " in a channel",
            scope: &[
                rq("team_id", "string", "Team ID"),
                rq("channel_id", "string", "Channel ID"),
            ],
            id: rq("message_id", "string", "Message ID"),
            fields: "body, sender, mentions and replies",
            set: &[],
            verbs: &[
                sp(
                    "send_channel_message",
                    "Post Teams message",
                    "Send a message to a Microsoft Teams channel.",
                    false,
                    &[
                        rq("team_id", "string", "Team ID"),
                        rq("channel_id", "string", "Channel ID"),
                        rq("content", "string", "Message HTML or text"),
                    ],
                    W,
                ),
                List,
                sp(
                    "reply_to_message",
                    "Reply in Teams",
                    "Reply to a message in a Microsoft Teams channel thread.",
                    true,
                    &[rq("content", "string", "Reply text")],
                    W,
                ),
            ],
        },
        Obj {
            one: "channel",
            many: "channels",
            place: " of a team",
            scope: TEAMS_TEAM,
            id: rq("channel_id", "string", "Channel ID"),
            fields: "display name, description and membership type",
            set: &[
                rq("display_name", "string", "Channel name"),
                op("description", "string", "Description"),
            ],
            verbs: &[List, Create, Get],
        },
        Obj {
            one: "chat",
            many: "chats",
            place: " of the user",
            scope: NONE,
            id: rq("chat_id", "string", "Chat ID"),
            fields: "topic, members and last message",
            set: &[],
            verbs: &[
                List,
                sp(
                    "send_chat_message",
                    "Send Teams chat",
                    "Send a message in a Microsoft Teams one-on-one or group chat.",
                    true,
                    &[rq("content", "string", "Message text")],
                    W,
                ),
            ],
        },
    ],
};

const OUTLOOK: Svc = Svc {
    key: "outlook",
    name: "Outlook",
    objs: &[
        Obj {
            one: "mail",
            many: "mails",
            place: " in a mail folder",
            scope: NONE,
            id: rq("message_id", "string", "Message ID"),
            fields: "subject, sender, recipients, body and attachments",
            set: &[],
            verbs: &[
                sp(
                    "send_mail",
                    "Send Outlook email",
                    "Send an email from the user's Outlook / Microsoft 365 mailbox.",
                    false,
                    &[
                        rq("to", "array", "Recipient addresses"),
                        rq("subject", "string", "Subject"),
                        rq("body", "string", "HTML or text body"),
                    ],
                    W,
                ),
                List,
                Get,
                sp(
                    "move_mail",
                    "Move Outlook email",
                    "Move an Outlook email to another folder, such as Archive.",
                    true,
                    &[rq(
                        "destination_folder",
                        "string",
                        "Folder ID or well-known name",
                    )],
                    W,
                ),
            ],
        },
        Obj {
            one: "event",
            many: "events",
            place: " in the calendar",
            scope: NONE,
            id: rq("event_id", "string", "Event ID"),
            fields: "subject, start, end, attendees, location and online meeting link",
            set: &[
                rq("subject", "string", "Event subject"),
                rq("start", "string", "Start (ISO 8601)"),
                rq("end", "string", "End (ISO 8601)"),
            ],
            verbs: &[List, Create, Get, Delete],
        },
        Obj {
            one: "contact",
            many: "contacts",
            place: "",
            scope: NONE,
            id: rq("contact_id", "string", "Contact ID"),
            fields: "names, emails, phones and company",
            set: &[
                rq("given_name", "string", "First name"),
                op("email", "string", "Email"),
            ],
            verbs: &[List, Create],
        },
    ],
};

const QUICKBOOKS: Svc = Svc {
    key: "quickbooks",
    name: "QuickBooks",
    objs: &[
        Obj {
            one: "invoice",
            many: "invoices",
            place: "",
            scope: NONE,
            id: rq("invoice_id", "string", "Invoice ID"),
            fields: "customer, line items, total, balance and due date",
            set: &[
                rq("customer_id", "string", "Customer ID"),
                rq("lines", "array", "Line items with amount and item"),
            ],
            verbs: &[
                Create,
                Get,
                List,
                sp(
                    "send_invoice",
                    "Email QuickBooks invoice",
                    "Email a QuickBooks invoice to the customer.",
                    true,
                    &[op("email", "string", "Override recipient address")],
                    W,
                ),
            ],
        },
        Obj {
            one: "payment",
            many: "payments",
            place: "",
            scope: NONE,
            id: rq("payment_id", "string", "Payment ID"),
            fields: "customer, amount and linked invoices",
            set: &[],
            verbs: &[
                sp(
                    "record_payment",
                    "Record QuickBooks payment",
                    "Record a customer payment in QuickBooks and apply it to open invoices.",
                    false,
                    &[
                        rq("customer_id", "string", "Customer ID"),
                        rq("amount", "number", "Amount received"),
                        op("invoice_ids", "array", "Invoices to apply it to"),
                    ],
                    W,
                ),
                List,
            ],
        },
        Obj {
            one: "customer",
            many: "customers",
            place: "",
            scope: NONE,
            id: rq("customer_id", "string", "Customer ID"),
            fields: "display name, email, balance and billing address",
            set: &[
                rq("display_name", "string", "Display name"),
                op("email", "string", "Email"),
            ],
            verbs: &[List, Get, Create],
        },
        Obj {
            one: "report",
            many: "reports",
            place: "",
            scope: NONE,
            id: rq("report", "string", "Report name"),
            fields: "rows and columns",
            set: &[],
            verbs: &[sp(
                "get_profit_and_loss",
                "Profit and loss report",
                "Run the QuickBooks profit and loss report for a date range.",
                false,
                &[
                    rq("start_date", "string", "YYYY-MM-DD"),
                    rq("end_date", "string", "YYYY-MM-DD"),
                ],
                R,
            )],
        },
    ],
};

const XERO: Svc = Svc {
    key: "xero",
    name: "Xero",
    objs: &[
        Obj {
            one: "invoice",
            many: "invoices",
            place: "",
            scope: NONE,
            id: rq("invoice_id", "string", "Invoice ID"),
            fields: "contact, line items, status, amount due and due date",
            set: &[
                rq("contact_id", "string", "Contact ID"),
                rq("line_items", "array", "Line items"),
            ],
            verbs: &[List, Get, Create, Update],
        },
        Obj {
            one: "contact",
            many: "contacts",
            place: "",
            scope: NONE,
            id: rq("contact_id", "string", "Contact ID"),
            fields: "name, email, addresses and balances",
            set: &[
                rq("name", "string", "Contact name"),
                op("email", "string", "Email"),
            ],
            verbs: &[List, Get, Create],
        },
        Obj {
            one: "bank_transaction",
            many: "bank_transactions",
            place: "",
            scope: NONE,
            id: rq("bank_transaction_id", "string", "Bank transaction ID"),
            fields: "date, amount, contact and reconciliation state",
            set: &[],
            verbs: &[List, Get],
        },
    ],
};

const DOCUSIGN: Svc = Svc {
    key: "docusign",
    name: "DocuSign",
    objs: &[
        Obj {
            one: "envelope",
            many: "envelopes",
            place: "",
            scope: NONE,
            id: rq("envelope_id", "string", "Envelope ID"),
            fields: "status, recipients, documents and audit events",
            set: &[],
            verbs: &[
                sp(
                    "send_envelope",
                    "Send for signature",
                    "Send a document for e-signature with DocuSign to one or more signers.",
                    false,
                    &[
                        rq("document_base64", "string", "PDF document, base64"),
                        rq("signers", "array", "Signers with name and email"),
                        op("email_subject", "string", "Subject of the signing email"),
                    ],
                    W,
                ),
                Get,
                List,
                sp(
                    "void_envelope",
                    "Void DocuSign envelope",
                    "Void an in-progress DocuSign envelope so it can no longer be signed.",
                    true,
                    &[rq("reason", "string", "Reason shown to recipients")],
                    D,
                ),
                sp(
                    "download_signed_document",
                    "Download signed document",
                    "Download the completed, signed documents of a DocuSign envelope as PDF.",
                    true,
                    NONE,
                    R,
                ),
            ],
        },
        Obj {
            one: "template",
            many: "templates",
            place: "",
            scope: NONE,
            id: rq("template_id", "string", "Template ID"),
            fields: "name, roles and documents",
            set: &[],
            verbs: &[List, Get],
        },
    ],
};

const OKTA: Svc = Svc {
    key: "okta",
    name: "Okta",
    objs: &[
        Obj {
            one: "user",
            many: "users",
            place: " in the org",
            scope: NONE,
            id: rq("user_id", "string", "User ID or login"),
            fields: "profile, status, groups and last login",
            set: &[
                rq("email", "string", "Email / login"),
                rq("first_name", "string", "First name"),
                op("last_name", "string", "Last name"),
            ],
            verbs: &[
                Get,
                List,
                Create,
                sp(
                    "deactivate_user",
                    "Deactivate Okta user",
                    "Deactivate an Okta user, revoking access to all applications.",
                    true,
                    NONE,
                    D,
                ),
                sp(
                    "reset_password",
                    "Reset Okta password",
                    "Start a password reset for an Okta user and optionally email them the link.",
                    true,
                    &[op("send_email", "boolean", "Email the reset link")],
                    W,
                ),
                sp(
                    "add_user_to_group",
                    "Add user to Okta group",
                    "Add an Okta user to a group, granting the group's app assignments.",
                    true,
                    &[rq("group_id", "string", "Group ID")],
                    W,
                ),
            ],
        },
        Obj {
            one: "group",
            many: "groups",
            place: "",
            scope: NONE,
            id: rq("group_id", "string", "Group ID"),
            fields: "name, description and member count",
            set: &[rq("name", "string", "Group name")],
            verbs: &[List, Get, Create],
        },
        Obj {
            one: "application",
            many: "applications",
            place: "",
            scope: NONE,
            id: rq("app_id", "string", "Application ID"),
            fields: "label, sign-on mode and assignments",
            set: &[],
            verbs: &[List, Get],
        },
    ],
};

const DISCORD: Svc = Svc {
    key: "discord",
    name: "Discord",
    objs: &[
        Obj {
            one: "message",
            many: "messages",
            place: " in a channel",
            scope: &[rq("channel_id", "string", "Channel ID")],
            id: rq("message_id", "string", "Message ID"),
            fields: "content, author, embeds and reactions",
            set: &[rq("content", "string", "Message text")],
            verbs: &[
                sp(
                    "send_message",
                    "Send Discord message",
                    "Send a message to a Discord channel, with optional embeds.",
                    false,
                    &[
                        rq("channel_id", "string", "Channel ID"),
                        rq("content", "string", "Message text"),
                        op("embeds", "array", "Rich embeds"),
                    ],
                    W,
                ),
                List,
                Delete,
            ],
        },
        Obj {
            one: "member",
            many: "members",
            place: " of a server",
            scope: &[rq("guild_id", "string", "Server (guild) ID")],
            id: rq("user_id", "string", "User ID"),
            fields: "nickname, roles and join date",
            set: &[],
            verbs: &[
                List,
                sp(
                    "assign_role",
                    "Assign Discord role",
                    "Give a role to a member of a Discord server.",
                    true,
                    &[rq("role_id", "string", "Role ID")],
                    W,
                ),
                sp(
                    "kick_member",
                    "Kick Discord member",
                    "Remove a member from a Discord server.",
                    true,
                    &[op("reason", "string", "Audit log reason")],
                    D,
                ),
            ],
        },
    ],
};

const MONDAY: Svc = Svc {
    key: "monday",
    name: "monday.com",
    objs: &[
        Obj {
            one: "item",
            many: "items",
            place: " on a board",
            scope: &[rq("board_id", "integer", "Board ID")],
            id: rq("item_id", "integer", "Item ID"),
            fields: "name, group, column values and updates",
            set: &[
                rq("item_name", "string", "Item name"),
                op("column_values", "object", "Column values by column ID"),
            ],
            verbs: &[
                Create,
                List,
                Get,
                Update,
                sp(
                    "move_item_to_group",
                    "Move monday.com item",
                    "Move a monday.com item to another group on its board.",
                    true,
                    &[rq("group_id", "string", "Destination group ID")],
                    W,
                ),
            ],
        },
        Obj {
            one: "board",
            many: "boards",
            place: "",
            scope: NONE,
            id: rq("board_id", "integer", "Board ID"),
            fields: "name, groups, columns and owners",
            set: &[],
            verbs: &[List, Get],
        },
    ],
};

const SNOWFLAKE: Svc = Svc {
    key: "snowflake",
    name: "Snowflake",
    objs: &[
        Obj {
            one: "query",
            many: "queries",
            place: "",
            scope: NONE,
            id: rq("query_id", "string", "Query ID"),
            fields: "status, rows and columns",
            set: &[],
            verbs: &[
                sp(
                    "run_query",
                    "Run Snowflake SQL",
                    "Run a SQL statement in a Snowflake warehouse and return the result rows.",
                    false,
                    &[
                        rq("sql", "string", "SQL statement"),
                        op("warehouse", "string", "Warehouse to use"),
                        op("database", "string", "Database"),
                    ],
                    R,
                ),
                sp(
                    "get_query_status",
                    "Snowflake query status",
                    "Get the status and result of an asynchronous Snowflake query.",
                    true,
                    NONE,
                    R,
                ),
            ],
        },
        Obj {
            one: "table",
            many: "tables",
            place: " in a schema",
            scope: &[
                rq("database", "string", "Database"),
                rq("schema", "string", "Schema"),
            ],
            id: rq("table", "string", "Table name"),
            fields: "columns, row count and size",
            set: &[],
            verbs: &[
                List,
                sp(
                    "describe_table",
                    "Describe Snowflake table",
                    "Describe the columns and types of a Snowflake table.",
                    true,
                    NONE,
                    R,
                ),
            ],
        },
    ],
};

const BIGQUERY: Svc = Svc {
    key: "bigquery",
    name: "BigQuery",
    objs: &[
        Obj {
            one: "job",
            many: "jobs",
            place: " in a project",
            scope: &[rq("project_id", "string", "Google Cloud project ID")],
            id: rq("job_id", "string", "Job ID"),
            fields: "state, statistics and errors",
            set: &[],
            verbs: &[
                sp(
                    "run_query",
                    "Run BigQuery SQL",
                    "Run a GoogleSQL query in BigQuery and return the result rows.",
                    false,
                    &[
                        rq("project_id", "string", "Google Cloud project ID"),
                        rq("query", "string", "GoogleSQL query"),
                        op("dry_run", "boolean", "Only estimate bytes processed"),
                    ],
                    R,
                ),
                Get,
                List,
            ],
        },
        Obj {
            one: "dataset",
            many: "datasets",
            place: " in a project",
            scope: &[rq("project_id", "string", "Google Cloud project ID")],
            id: rq("dataset_id", "string", "Dataset ID"),
            fields: "location, tables and labels",
            set: &[],
            verbs: &[List, Get],
        },
    ],
};

const SQUARE: Svc = Svc {
    key: "square",
    name: "Square",
    objs: &[
        Obj {
            one: "payment",
            many: "payments",
            place: "",
            scope: NONE,
            id: rq("payment_id", "string", "Payment ID"),
            fields: "amount, status, card details and receipt URL",
            set: &[],
            verbs: &[
                List,
                Get,
                sp(
                    "refund_payment",
                    "Refund Square payment",
                    "Refund a Square card payment, fully or partially.",
                    true,
                    &[
                        rq("amount", "integer", "Amount in the smallest currency unit"),
                        op("reason", "string", "Reason for the refund"),
                    ],
                    D,
                ),
            ],
        },
        Obj {
            one: "catalog_item",
            many: "catalog_items",
            place: "",
            scope: NONE,
            id: rq("object_id", "string", "Catalog object ID"),
            fields: "name, variations and prices",
            set: &[],
            verbs: &[List, Search],
        },
    ],
};

const SEGMENT: Svc = Svc {
    key: "segment",
    name: "Segment",
    objs: &[Obj {
        one: "event",
        many: "events",
        place: "",
        scope: NONE,
        id: rq("message_id", "string", "Message ID"),
        fields: "",
        set: &[],
        verbs: &[
            sp(
                "track_event",
                "Track analytics event",
                "Record a user action (track call) in Segment with properties.",
                false,
                &[
                    rq("user_id", "string", "User ID"),
                    rq("event", "string", "Event name, e.g. Order Completed"),
                    op("properties", "object", "Event properties"),
                ],
                W,
            ),
            sp(
                "identify_user",
                "Identify user",
                "Tie a user to their traits (identify call) in Segment.",
                false,
                &[
                    rq("user_id", "string", "User ID"),
                    rq("traits", "object", "User traits such as email and plan"),
                ],
                W,
            ),
        ],
    }],
};

const SERVICES: &[Svc] = &[
    GITHUB, SLACK, JIRA, STRIPE, GCAL, GMAIL, NOTION, LINEAR, GITLAB, CONFLUENCE, ASANA, TRELLO,
    SHOPIFY, HUBSPOT, SALESFORCE, ZENDESK, INTERCOM, GDRIVE, GSHEETS, DROPBOX, TWILIO, SENDGRID,
    MAILCHIMP, PAGERDUTY, DATADOG, SENTRY, S3, CLOUDFLARE, VERCEL, FIGMA, AIRTABLE, ZOOM, TEAMS,
    OUTLOOK, QUICKBOOKS, XERO, DOCUSIGN, OKTA, DISCORD, MONDAY, SNOWFLAKE, BIGQUERY, SQUARE,
    SEGMENT,
];

/// Workspace qualifiers for the tools beyond the base set.
const QUALIFIERS: &[(&str, &str)] = &[
    ("eu", "EU"),
    ("us", "US"),
    ("apac", "APAC"),
    ("staging", "staging"),
    ("sandbox", "sandbox"),
    ("legacy", "legacy"),
    ("partner", "partner"),
    ("internal", "internal"),
    ("acme", "Acme"),
    ("globex", "Globex"),
    ("initech", "Initech"),
    ("umbrella", "Umbrella"),
    ("hooli", "Hooli"),
    ("wayne", "Wayne"),
    ("stark", "Stark"),
    ("dev", "development"),
];

// ---- generation ----------------------------------------------------------------------------

/// One generated tool, in output form.
#[derive(Debug, Clone)]
pub struct ToolDef {
    pub name: String,
    pub title: String,
    pub description: String,
    pub json: Json,
}

fn words(snake: &str) -> String {
    snake.replace('_', " ")
}

fn prop_json(p: &P) -> Json {
    let mut members = vec![("type".to_owned(), Json::Str(p.ty.to_owned()))];
    if p.ty == "array" {
        members.push((
            "items".to_owned(),
            Json::Obj(vec![("type".to_owned(), Json::Str("string".to_owned()))]),
        ));
    }
    members.push(("description".to_owned(), Json::Str(p.desc.to_owned())));
    Json::Obj(members)
}

fn push_unique(props: &mut Vec<P>, p: P) {
    if !props.iter().any(|q| q.name == p.name) {
        props.push(p);
    }
}

const FIELDS_EXTRA: P = op("fields", "array", "Extra fields to include in the response");
const CONFIRM: P = op("confirm", "boolean", "Set to true to confirm the action");

struct Draft {
    suffix: String,
    title: String,
    description: String,
    props: Vec<P>,
    kind: Kind,
    idempotent: bool,
}

fn draft(svc: &Svc, obj: &Obj, verb: &V, rng: &mut SplitMix64) -> Draft {
    let many = words(obj.many);
    let one = words(obj.one);
    let name = svc.name;
    let mut props: Vec<P> = Vec::new();
    let (suffix, title, description, kind, idempotent) = match verb {
        V::List => {
            for p in obj.scope {
                push_unique(&mut props, *p);
            }
            if props.len() < 2 && rng.below(2) == 0 {
                push_unique(
                    &mut props,
                    op(
                        "updated_since",
                        "string",
                        "Only items updated after this time (RFC 3339)",
                    ),
                );
            }
            push_unique(&mut props, LIMIT);
            push_unique(&mut props, CURSOR);
            let desc = match rng.below(3) {
                0 => format!("List {many} in {name}{}. Supports filtering and cursor-based pagination; returns a page of {many} with their IDs and key fields.", obj.place),
                1 => format!("Return the {many}{} from {name}, most recently updated first. Pass the cursor from a previous call to get the next page.", obj.place),
                _ => format!("Page through {name} {many}{}. Each entry includes the ID and a summary; use the matching get tool for full details.", obj.place),
            };
            (
                format!("list_{}", obj.many),
                format!("List {name} {many}"),
                desc,
                Kind::Read,
                true,
            )
        }
        V::Get => {
            for p in obj.scope {
                push_unique(&mut props, *p);
            }
            push_unique(&mut props, obj.id);
            if props.len() < 2 {
                push_unique(&mut props, FIELDS_EXTRA);
            }
            let desc = match rng.below(2) {
                0 => format!(
                    "Retrieve a single {name} {one} by ID, including {}.",
                    obj.fields
                ),
                _ => format!(
                    "Get one {one} from {name} by its ID and return its {}.",
                    obj.fields
                ),
            };
            (
                format!("get_{}", obj.one),
                format!("Get {name} {one}"),
                desc,
                Kind::Read,
                true,
            )
        }
        V::Create => {
            for p in obj.scope {
                push_unique(&mut props, *p);
            }
            for (i, p) in obj.set.iter().enumerate() {
                let mut p = *p;
                if i == 0 {
                    p.req = true;
                }
                push_unique(&mut props, p);
            }
            if props.len() < 2 {
                push_unique(
                    &mut props,
                    op("description", "string", "Optional description"),
                );
            }
            let desc = match rng.below(2) {
                0 => format!("Create a new {one} in {name}{}. Returns the created {one} with its ID.", obj.place),
                _ => format!("Create a {name} {one}{} from the given fields and return it, including the new ID.", obj.place),
            };
            (
                format!("create_{}", obj.one),
                format!("Create {name} {one}"),
                desc,
                Kind::Write,
                false,
            )
        }
        V::Update => {
            for p in obj.scope {
                push_unique(&mut props, *p);
            }
            push_unique(&mut props, obj.id);
            for p in obj.set {
                let mut p = *p;
                p.req = false;
                push_unique(&mut props, p);
            }
            let desc = format!(
                "Update an existing {name} {one}. Only the fields provided are changed; returns the updated {one}."
            );
            (
                format!("update_{}", obj.one),
                format!("Update {name} {one}"),
                desc,
                Kind::Write,
                true,
            )
        }
        V::Delete => {
            for p in obj.scope {
                push_unique(&mut props, *p);
            }
            push_unique(&mut props, obj.id);
            if props.len() < 2 {
                push_unique(&mut props, CONFIRM);
            }
            let desc = format!("Permanently delete a {name} {one} by ID. This cannot be undone.");
            (
                format!("delete_{}", obj.one),
                format!("Delete {name} {one}"),
                desc,
                Kind::Destructive,
                true,
            )
        }
        V::Search => {
            push_unique(&mut props, QUERY);
            for p in obj.scope {
                push_unique(&mut props, *p);
            }
            push_unique(&mut props, LIMIT);
            let desc = match rng.below(2) {
                0 => format!("Search {name} {many} by free-text query{}. Returns the best matching {many} ranked by relevance.", obj.place),
                _ => format!("Find {many} in {name} whose text matches a query; results are ranked by relevance."),
            };
            (
                format!("search_{}", obj.many),
                format!("Search {name} {many}"),
                desc,
                Kind::Read,
                true,
            )
        }
        V::S(s) => {
            let own_scope = s
                .props
                .iter()
                .any(|p| obj.scope.iter().any(|q| q.name == p.name));
            if !own_scope {
                for p in obj.scope {
                    push_unique(&mut props, *p);
                }
            }
            if s.with_id {
                push_unique(&mut props, obj.id);
            }
            for p in s.props {
                push_unique(&mut props, *p);
            }
            if props.len() < 2 {
                push_unique(&mut props, CONFIRM);
            }
            (
                s.name.to_owned(),
                s.title.to_owned(),
                s.desc.to_owned(),
                s.kind,
                s.kind != Kind::Write,
            )
        }
    };
    // 2-5 properties: required ones first, then optional ones, cut at 5.
    let mut ordered: Vec<P> = props.iter().filter(|p| p.req).copied().collect();
    ordered.extend(props.iter().filter(|p| !p.req).copied());
    ordered.truncate(5);
    // Keep declaration order among the survivors (scope first reads naturally).
    let kept: Vec<P> = props
        .into_iter()
        .filter(|p| ordered.iter().any(|q| q.name == p.name))
        .collect();
    Draft {
        suffix,
        title,
        description,
        props: kept,
        kind,
        idempotent,
    }
}

fn tool_json(name: &str, title: &str, description: &str, d: &Draft) -> Json {
    let properties = Json::Obj(
        d.props
            .iter()
            .map(|p| (p.name.to_owned(), prop_json(p)))
            .collect(),
    );
    let required = Json::Arr(
        d.props
            .iter()
            .filter(|p| p.req)
            .map(|p| Json::Str(p.name.to_owned()))
            .collect(),
    );
    let schema = Json::Obj(vec![
        ("type".to_owned(), Json::Str("object".to_owned())),
        ("properties".to_owned(), properties),
        ("required".to_owned(), required),
    ]);
    let annotations = Json::Obj(vec![
        ("readOnlyHint".to_owned(), Json::Bool(d.kind == Kind::Read)),
        (
            "destructiveHint".to_owned(),
            Json::Bool(d.kind == Kind::Destructive),
        ),
        ("idempotentHint".to_owned(), Json::Bool(d.idempotent)),
        ("openWorldHint".to_owned(), Json::Bool(true)),
    ]);
    Json::Obj(vec![
        ("name".to_owned(), Json::Str(name.to_owned())),
        ("title".to_owned(), Json::Str(title.to_owned())),
        ("description".to_owned(), Json::Str(description.to_owned())),
        ("inputSchema".to_owned(), schema),
        ("annotations".to_owned(), annotations),
    ])
}

/// The base set, in output order: round-robin across services; within a service, round-robin
/// across its objects (each object's verbs in their listed order).
fn base_order() -> Vec<(&'static Svc, &'static Obj, &'static V)> {
    let per_service: Vec<Vec<(&'static Svc, &'static Obj, &'static V)>> = SERVICES
        .iter()
        .map(|svc| {
            let mut out = Vec::new();
            let depth = svc.objs.iter().map(|o| o.verbs.len()).max().unwrap_or(0);
            for k in 0..depth {
                for obj in svc.objs {
                    if let Some(v) = obj.verbs.get(k) {
                        out.push((svc, obj, v));
                    }
                }
            }
            out
        })
        .collect();
    let depth = per_service.iter().map(Vec::len).max().unwrap_or(0);
    let mut out = Vec::new();
    for k in 0..depth {
        for tools in &per_service {
            if let Some(t) = tools.get(k) {
                out.push(*t);
            }
        }
    }
    out
}

/// Is `name` a legal MCP tool name for this generator: `[A-Za-z0-9_.-]{1,64}`.
pub fn is_legal_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'.' || b == b'-')
}

/// Generate `count` tools. Deterministic and prefix-stable.
pub fn generate(count: usize) -> Vec<ToolDef> {
    let base = base_order();
    let mut out = Vec::with_capacity(count);
    let mut seen: HashSet<String> = HashSet::new();
    let mut round = 0usize;
    while out.len() < count && !base.is_empty() {
        for (svc, obj, verb) in &base {
            if out.len() >= count {
                break;
            }
            let probe = format!("{}_{}_{}_{round}", svc.key, obj.one, verb_key(verb));
            let mut rng = SplitMix64::from_key(&probe);
            let d = draft(svc, obj, verb, &mut rng);
            let base_name = format!("{}_{}", svc.key, d.suffix);
            let (name, title, description) = if round == 0 {
                (base_name, d.title.clone(), d.description.clone())
            } else {
                let idx = round - 1;
                let (q, label) = QUALIFIERS
                    .get(idx % QUALIFIERS.len())
                    .copied()
                    .unwrap_or(("x", "x"));
                let lap = idx / QUALIFIERS.len();
                let q = if lap == 0 {
                    q.to_owned()
                } else {
                    format!("{q}{}", lap + 1)
                };
                let label = if lap == 0 {
                    label.to_owned()
                } else {
                    format!("{label} {}", lap + 1)
                };
                (
                    format!("{q}_{base_name}"),
                    format!("{} ({label})", d.title),
                    format!(
                        "{} Operates on the {label} {} workspace.",
                        d.description, svc.name
                    ),
                )
            };
            if !is_legal_name(&name) || !seen.insert(name.clone()) {
                continue;
            }
            let json = tool_json(&name, &title, &description, &d);
            out.push(ToolDef {
                name,
                title,
                description,
                json,
            });
        }
        round += 1;
    }
    out
}

fn verb_key(v: &V) -> &'static str {
    match v {
        V::List => "list",
        V::Get => "get",
        V::Create => "create",
        V::Update => "update",
        V::Delete => "delete",
        V::Search => "search",
        V::S(s) => s.name,
    }
}

/// The JSONL text for `count` tools (one definition a line, trailing newline).
pub fn jsonl(count: usize) -> String {
    let mut out = String::new();
    for t in generate(count) {
        out.push_str(&t.json.to_json_string());
        out.push('\n');
    }
    out
}

/// Number of distinct tools in the base (unqualified) set.
pub fn base_size() -> usize {
    base_order().len()
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]
mod tests {
    use super::*;

    #[test]
    fn deterministic_and_prefix_stable() {
        let a = jsonl(300);
        let b = jsonl(300);
        assert_eq!(a, b);
        let big = jsonl(1000);
        assert!(big.starts_with(&a));
    }

    #[test]
    fn names_unique_legal_and_props_in_range() {
        let tools = generate(5000);
        assert_eq!(tools.len(), 5000);
        let mut seen = HashSet::new();
        for t in &tools {
            assert!(is_legal_name(&t.name), "{}", t.name);
            assert!(seen.insert(t.name.clone()), "duplicate {}", t.name);
            let v: serde_json::Value = serde_json::from_str(&t.json.to_json_string()).unwrap();
            let n = v["inputSchema"]["properties"].as_object().unwrap().len();
            assert!((2..=5).contains(&n), "{} has {n} properties", t.name);
            for r in v["inputSchema"]["required"].as_array().unwrap() {
                assert!(v["inputSchema"]["properties"]
                    .get(r.as_str().unwrap())
                    .is_some());
            }
        }
    }

    #[test]
    fn the_300_set_has_what_the_tests_use() {
        let names: Vec<String> = generate(300).into_iter().map(|t| t.name).collect();
        for want in [
            "stripe_refund_charge",
            "github_get_issue",
            "github_get_pull_request",
            "github_get_repository",
            "github_get_file_contents",
            "slack_post_message",
            "jira_transition_ticket",
            "gcal_list_events",
        ] {
            assert!(names.iter().any(|n| n == want), "{want} missing");
        }
        assert!(base_size() > 300);
    }
}
