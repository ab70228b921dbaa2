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
