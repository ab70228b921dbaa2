package core

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestBoundEndsAtExpiry(t *testing.T) {
	p := &Principal{ID: "t", Expires: time.Now().Add(30 * time.Millisecond)}
	ctx, cancel := p.Bound(context.Background())
	defer cancel()
	select {
	case <-ctx.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the context outlived its token")
	}
	if !errors.Is(context.Cause(ctx), ErrCredentialExpired) {
		t.Fatalf("cause = %v, want ErrCredentialExpired", context.Cause(ctx))
	}
}

func TestBoundEndsAtRevocation(t *testing.T) {
	revoked, revoke := context.WithCancel(context.Background())
	p := &Principal{ID: "k", revoked: revoked}
	ctx, cancel := p.Bound(context.Background())
	defer cancel()
	if ctx.Err() != nil {
		t.Fatal("ended before the revocation")
	}
	revoke()
	<-ctx.Done()
	if !errors.Is(context.Cause(ctx), ErrKeyRevoked) {
		t.Fatalf("cause = %v, want ErrKeyRevoked", context.Cause(ctx))
	}
}

func TestBoundWithoutEndLastsUntilCancel(t *testing.T) {
	p := &Principal{ID: "k"}
	ctx, cancel := p.Bound(context.Background())
	if ctx.Err() != nil {
		t.Fatal("ended at once")
	}
	cancel()
	if !errors.Is(context.Cause(ctx), context.Canceled) {
		t.Fatalf("cause = %v", context.Cause(ctx))
	}
}
