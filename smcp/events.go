// Package smcp is the A2C-SMCP protocol as a library: event names, the JSON
// wire form of the protocol types, and the flat error. It does no networking.
package smcp

// Namespace is the Socket.IO namespace of the protocol.
const Namespace = "/smcp"

// ProtocolVersion is the protocol version this library speaks.
const ProtocolVersion = "0.2.0"

// Events routed by the server from an agent to one computer.
const (
	EventToolCall     = "client:tool_call"
	EventGetConfig    = "client:get_config"
	EventGetTools     = "client:get_tools"
	EventGetDesktop   = "client:get_desktop"
	EventGetFinder    = "client:get_finder"
	EventReadResource = "client:read_resource" // gateway extension
)

// Events handled by the server itself.
const (
	EventJoinOffice     = "server:join_office"
	EventLeaveOffice    = "server:leave_office"
	EventUpdateConfig   = "server:update_config"
	EventUpdateToolList = "server:update_tool_list"
	EventUpdateDesktop  = "server:update_desktop"
	EventUpdateFinder   = "server:update_finder"
	EventToolCallCancel = "server:tool_call_cancel"
	EventListRoom       = "server:list_room"
)

// Notifications broadcast by the server to one office, never to the sender.
const (
	NotifyEnterOffice    = "notify:enter_office"
	NotifyLeaveOffice    = "notify:leave_office"
	NotifyUpdateConfig   = "notify:update_config"
	NotifyUpdateToolList = "notify:update_tool_list"
	NotifyUpdateDesktop  = "notify:update_desktop"
	NotifyUpdateFinder   = "notify:update_finder"
	NotifyToolCallCancel = "notify:tool_call_cancel"
)

// Roles of a session.
const (
	RoleAgent    = "agent"
	RoleComputer = "computer"
)

// Events of the 0.3 and 0.4 profiles (PROTOCOL-0.4.md §4).
const (
	EventGetResources  = "client:get_resources"
	EventGetSkills     = "client:get_skills"
	EventGetSkill      = "client:get_skill"
	EventGetBlob       = "client:get_blob"
	EventPutBlob       = "client:put_blob" // 0.4
	EventUpdateSkills  = "server:update_skills"
	NotifyUpdateSkills = "notify:update_skills"
)

// Extension events of this gateway's own computers for the sign-in of a
// headless computer to its MCP servers (docs/UPSTREAM.md), in no profile's
// table: a computer sends server:auth_required only when told to sign in
// through its gateway, and the gateway sends client:auth_callback only to a
// computer that sent it one. Never routed to an agent.
const (
	// EventAuthRequired (computer to gateway, no ack): a sign-in needs an
	// operator, {server, bundle_id, url, state, expires_at}.
	EventAuthRequired = "server:auth_required"
	// EventAuthCallback (gateway to computer, answered): the authorization
	// response, {state, code, iss, error}; the answer is {server} or a flat
	// error.
	EventAuthCallback = "client:auth_callback"
)
