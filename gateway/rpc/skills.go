package rpc

import (
	"context"

	smcpv1 "github.com/smcpgw/smcp-gateway/gen/smcp/v1"
	"github.com/smcpgw/smcp-gateway/smcp"
)

// The 0.3/0.4 requests. The caller acts in the office's version: an office
// of 0.2 computers has no such events, and the core answers 404 "unknown
// event ..." (NotFound), as PROTOCOL-0.4.md §4 G5 answers a connection.

func (s *service) GetResources(ctx context.Context, req *smcpv1.GetResourcesRequest) (*smcpv1.GetResourcesResponse, error) {
	sess, c, err := s.act(ctx, req.GetOfficeId())
	if err != nil {
		return nil, err
	}
	defer sess.Close()
	ret := &smcpv1.GetResourcesRet{}
	err = sess.Call(ctx, smcp.EventGetResources, &smcpv1.GetResourcesReq{
		Agent: c.agent, ReqId: newReqID(), Computer: req.GetComputer(),
		McpServer: req.GetMcpServer(), Cursor: req.Cursor,
	}, ret)
	if err != nil {
		return nil, toConnect(err)
	}
	return &smcpv1.GetResourcesResponse{Resources: ret.GetResources(), NextCursor: ret.NextCursor}, nil
}

func (s *service) GetSkills(ctx context.Context, req *smcpv1.GetSkillsRequest) (*smcpv1.GetSkillsResponse, error) {
	sess, c, err := s.act(ctx, req.GetOfficeId())
	if err != nil {
		return nil, err
	}
	defer sess.Close()
	ret := &smcpv1.GetSkillsRet{}
	err = sess.Call(ctx, smcp.EventGetSkills, &smcpv1.GetSkillsReq{Agent: c.agent, ReqId: newReqID(), Computer: req.GetComputer()}, ret)
	if err != nil {
		return nil, toConnect(err)
	}
	return &smcpv1.GetSkillsResponse{Skills: ret.GetSkills()}, nil
}

func (s *service) GetSkill(ctx context.Context, req *smcpv1.GetSkillRequest) (*smcpv1.GetSkillResponse, error) {
	sess, c, err := s.act(ctx, req.GetOfficeId())
	if err != nil {
		return nil, err
	}
	defer sess.Close()
	ret := &smcpv1.GetSkillRet{}
	err = sess.Call(ctx, smcp.EventGetSkill, &smcpv1.GetSkillReq{
		Agent: c.agent, ReqId: newReqID(), Computer: req.GetComputer(),
		Name: req.GetName(), RelPath: req.RelPath,
	}, ret)
	if err != nil {
		return nil, toConnect(err)
	}
	return &smcpv1.GetSkillResponse{
		Name: ret.GetName(), RelPath: ret.GetRelPath(), MimeType: ret.GetMimeType(),
		TotalSize: ret.GetTotalSize(), Sha256: ret.GetSha256(), Body: ret.Body, BlobHandle: ret.BlobHandle,
	}, nil
}
