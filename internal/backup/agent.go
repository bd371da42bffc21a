package backup

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"time"
)

// The backup agent. A physical backup reads the server's data directory, so mariadb-backup must run where the
// data volume is mounted: in the database Pod. The agent (Agent, `mysqlfleet-backup agent`) runs there as a
// native sidecar and does one thing on request: run mariadb-backup --backup --stream=xbstream against the server
// beside it and write the stream as the response body, with the outcome (completed or not, the GTID position of
// the copy, the server's version) in HTTP trailers, after the last byte. The backup Job (Agents) compresses,
// checksums and stores the stream and writes the manifest, as for a copy taken in its own container.
//
// Why the stream goes back through the Job instead of straight to the store from the database Pod: the Pod then
// holds no store credentials and mounts no backup volume (a PVC target is one volume per member, which three Pods
// on three nodes could not all mount), retention and the report stay in the Job where they are for dumps, and
// compression costs the Job's CPU, not the database container's. The price is the copy crossing the Pod network
// uncompressed once, inside the member.
//
// Authentication: a caller must present AgentToken of the admin account's password, which the Job and the
// agent both have from the credentials Secret (the password itself never crosses the network). The agent
// serves one backup at a time; a second request is refused (409) while one runs. A caller that goes away
// cancels the copy: mariadb-backup is killed, and the Job writes no manifest for a stream cut short.

// AgentPath is the agent's one endpoint: POST a request for a physical backup.
const AgentPath = "/v1/backups/physical"

// The response's header and trailers.
const (
	// agentPodHeader names the Pod the agent runs in, recorded in the manifest.
	agentPodHeader = "Mysqlfleet-Pod"
	// agentOutcomeTrailer is "completed" when the copy completed, else absent or "failed".
	agentOutcomeTrailer = "Mysqlfleet-Outcome"
	agentErrorTrailer   = "Mysqlfleet-Error"
	agentGTIDTrailer    = "Mysqlfleet-Gtid-Position"
	agentVersionTrailer = "Mysqlfleet-Server-Version"
	agentCompleted      = "completed"
)

// AgentToken is the bearer token of the backup agent for an admin password: an HMAC of a fixed label keyed
// with the password, so that a token seen on the network does not give the password away.
func AgentToken(password string) string {
	mac := hmac.New(sha256.New, []byte(password))
	mac.Write([]byte("mysqlfleet backup agent v1"))
	return hex.EncodeToString(mac.Sum(nil))
}

// Agent serves physical backups of the server beside it (see the comment above AgentPath).
type Agent struct {
	// Source is the server: the admin account over loopback, Conn.Path naming mariadb-backup if not on PATH.
	Source Source
	// Token is what a caller must present (AgentToken of Source.Password).
	Token string
	// Pod is the agent's Pod, told to callers for their manifest.
	Pod string
	// TempDir holds mariadb-backup's scratch directory; empty means the system's.
	TempDir string
	// LogCopyInterval is mariadb-backup's --log-copy-interval; zero means DefaultLogCopyInterval.
	LogCopyInterval time.Duration
	// Log receives a line per request and mariadb-backup's log; may be nil.
	Log io.Writer

	busy atomic.Bool
}

func (a *Agent) logf(format string, args ...any) {
	if a.Log != nil {
		_, _ = fmt.Fprintf(a.Log, format+"\n", args...)
	}
}

// ServeHTTP runs one backup per request: the xbstream as the body, the outcome in the trailers.
func (a *Agent) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != AgentPath {
		http.NotFound(w, r)
		return
	}
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "POST a request for a backup", http.StatusMethodNotAllowed)
		return
	}
	token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok || a.Token == "" || subtle.ConstantTimeCompare([]byte(token), []byte(a.Token)) != 1 {
		a.logf("Refused a backup request from %s: no valid token", r.RemoteAddr)
		http.Error(w, "a valid bearer token is needed", http.StatusUnauthorized)
		return
	}
	if !a.busy.CompareAndSwap(false, true) {
		http.Error(w, "a backup is running", http.StatusConflict)
		return
	}
	defer a.busy.Store(false)
	a.logf("Backup requested by %s", r.RemoteAddr)
	x, err := startMariaDBBackup(r.Context(), a.Source, a.TempDir, a.LogCopyInterval, a.Log)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	defer x.close()
	h := w.Header()
	h.Set("Trailer", strings.Join([]string{agentOutcomeTrailer, agentErrorTrailer, agentGTIDTrailer,
		agentVersionTrailer}, ", "))
	h.Set("Content-Type", "application/octet-stream")
	h.Set(agentPodHeader, a.Pod)
	w.WriteHeader(http.StatusOK)
	_, copyErr := io.Copy(w, x.r)
	position, version, err := x.end()
	if err == nil && copyErr != nil {
		err = fmt.Errorf("failed to send the stream: %w", copyErr)
	}
	if err != nil {
		a.logf("Backup failed: %v", err)
		h.Set(agentOutcomeTrailer, "failed")
		h.Set(agentErrorTrailer, headerValue(err.Error()))
		return
	}
	a.logf("Backup sent: GTID position %s", position)
	h.Set(agentOutcomeTrailer, agentCompleted)
	h.Set(agentGTIDTrailer, position)
	h.Set(agentVersionTrailer, version)
}

// headerValue makes s fit one header line: no control characters, at most messageSize bytes.
func headerValue(s string) string {
	s = strings.Map(func(r rune) rune {
		if r < ' ' || r == 0x7f {
			return ' '
		}
		return r
	}, s)
	if len(s) > messageSize {
		s = s[len(s)-messageSize:]
	}
	return s
}

// Agents are the backup agents a physical backup is asked of, in order: the first that takes the request
// copies its server (a backup Job lists the replicas' Service before the primary's, so that a replica in sync
// is copied when there is one).
type Agents struct {
	// Addrs are host:port addresses of agents, or of Services in front of them.
	Addrs []string
	// Token is AgentToken of the admin password.
	Token string
	// DialTimeout bounds each connection attempt; zero means 5 s.
	DialTimeout time.Duration
}

// start asks each agent in turn for a copy until one answers with its stream.
func (a *Agents) start(ctx context.Context) (*xbstream, error) {
	if len(a.Addrs) == 0 {
		return nil, errors.New("no backup agent to ask")
	}
	dialer := &net.Dialer{Timeout: a.DialTimeout}
	if dialer.Timeout == 0 {
		dialer.Timeout = 5 * time.Second
	}
	client := &http.Client{Transport: &http.Transport{
		DialContext: dialer.DialContext,
		// The answer's header comes once mariadb-backup has started; the body takes as long as the copy.
		ResponseHeaderTimeout: time.Minute,
		DisableCompression:    true,
	}}
	var errs []error
	for _, addr := range a.Addrs {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+addr+AgentPath, nil)
		if err != nil {
			return nil, err
		}
		req.Header.Set("Authorization", "Bearer "+a.Token)
		resp, err := client.Do(req)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", addr, err))
			continue
		}
		if resp.StatusCode != http.StatusOK {
			msg, _ := io.ReadAll(io.LimitReader(resp.Body, messageSize))
			_ = resp.Body.Close()
			errs = append(errs, fmt.Errorf("%s: %s: %s", addr, resp.Status, strings.TrimSpace(string(msg))))
			continue
		}
		end := func() (string, string, error) {
			// The trailers are read with the body's end; a body given up on ends the request.
			_, _ = io.Copy(io.Discard, resp.Body)
			t := resp.Trailer
			if t.Get(agentOutcomeTrailer) != agentCompleted {
				reason := t.Get(agentErrorTrailer)
				if reason == "" {
					reason = "the stream ended without the agent's outcome"
				}
				return "", "", fmt.Errorf("the backup agent at %s: %s", addr, reason)
			}
			return t.Get(agentGTIDTrailer), t.Get(agentVersionTrailer), nil
		}
		return &xbstream{r: resp.Body, end: end, close: func() { _ = resp.Body.Close() },
			host: addr, pod: resp.Header.Get(agentPodHeader)}, nil
	}
	return nil, fmt.Errorf("no backup agent took the request: %w", errors.Join(errs...))
}
