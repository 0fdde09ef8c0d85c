package discovery

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"syscall"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestErrorKind(t *testing.T) {
	pods := schema.GroupResource{Resource: "pods"}
	refused := &url.Error{Op: "Get", URL: "https://127.0.0.1:6443/api/v1/pods",
		Err: &net.OpError{Op: "dial", Net: "tcp", Err: fmt.Errorf("connect: %w", syscall.ECONNREFUSED)}}
	tests := []struct {
		name string
		err  error
		want string
	}{
		{"RBAC denies", apierrors.NewForbidden(pods, "", errors.New("cannot list pods in namespace gpu-operator")), kindForbidden},
		{"bad credentials", apierrors.NewUnauthorized("token expired"), kindUnauthorized},
		{"the API server is down", refused, kindUnavailable},
		{"the connection drops", fmt.Errorf("watch: %w", io.ErrUnexpectedEOF), kindUnavailable},
		{"the API server is shutting down", apierrors.NewServiceUnavailable("shutting down"), kindUnavailable},
		{"throttled", apierrors.NewTooManyRequests("slow down", 1), kindUnavailable},
		{"an answer the call cannot use", apierrors.NewBadRequest("bad selector"), kindOther},
		{"an expired watch is the informer's business", apierrors.NewResourceExpired("too old resource version"), ""},
		{"stopping is no failure", context.Canceled, ""},
		{"success", nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := errorKind(tt.err); got != tt.want {
				t.Errorf("errorKind(%v) = %q, want %q", tt.err, got, tt.want)
			}
		})
	}
}

func TestDecodeModelLabel(t *testing.T) {
	for in, want := range map[string]string{
		"meta-llama--Llama-3.1-8B-Instruct": "meta-llama/Llama-3.1-8B-Instruct",
		"Qwen--Qwen2.5-7B-Instruct":         "Qwen/Qwen2.5-7B-Instruct",
		"llama-3-8b":                        "llama-3-8b", // single dashes stay
		"":                                  "",
	} {
		if got := DecodeModelLabel(in); got != want {
			t.Errorf("DecodeModelLabel(%q) = %q, want %q", in, got, want)
		}
	}
}
