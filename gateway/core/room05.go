package core

import "github.com/smcpgw/smcp-gateway/smcp"

// The room model of 0.5 (PROTOCOL-0.5.md rows 1-7): one agent and one
// computer per office, and the room codes in place of 403. The rules apply
// to the members and sessions that speak a profile with SeatPerRole; an
// office speaks one profile, so they are the office's rules.

// SeatPerRole reports whether m speaks a profile whose offices hold one
// member of each role (a lease, of no version, follows the older rules).
func (m Member) SeatPerRole() bool {
	v, ok := smcp.LookupProfile(m.Version)
	return ok && v.SeatPerRole()
}

// RoomFull is how a Registry refuses m when its office's seat for m's role
// is taken and m's profile has one seat per role: 4101 with the protocol's
// own message and details, naming no holder (the protocol does not let a
// refusal reveal who holds the seat).
func RoomFull(officeID, role string) error {
	msg := "Room already has a computer"
	if role == smcp.RoleAgent {
		msg = "Room already has an agent"
	}
	return smcp.Errorf(smcp.CodeRoomFull, "%s", msg).WithDetails(map[string]any{"office_id": officeID, "role": role})
}
