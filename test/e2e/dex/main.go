// Command dex starts Dex's OpenID Provider (github.com/dexidp/dex/server, in-memory storage, local signer) on
// loopback HTTPS from a small JSON settings file written by test/helpers/dex.ts. It is the e2e layer's second real
// OpenID Provider beside oidc-provider.
//
// Why not Dex's own cmd/dex: at this commit cmd/dex (through server/apiserver, the gRPC admin API) needs
// github.com/dexidp/dex/api/v2 at an unreleased version that only Dex's own replace directive supplies, and the Go
// module proxy serves no version of it that compiles. Everything the plugin talks to (discovery, /token with its
// grants, /device, the login pages, the connectors) is Dex's server package itself; only the config loading and the
// gRPC API are left out.
//
//	dex -config settings.json   # prints "dex: serving <issuer>" on stderr when it listens
package main

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/dexidp/dex/server"
	"github.com/dexidp/dex/server/connectors"
	"github.com/dexidp/dex/server/session"
	"github.com/dexidp/dex/server/signer"
	"github.com/dexidp/dex/server/tokens"
	"github.com/dexidp/dex/storage"
	"github.com/dexidp/dex/storage/memory"
)

// version is stamped by ../controlplane/build.mjs with the pseudo-version of github.com/dexidp/dex.
var version = "DEV"

// settings is the file test/helpers/dex.ts writes. Clients are Dex's own storage.Client JSON (id, secret, public,
// redirectURIs, trustedPeers, name, …); passwords carry the plain password, hashed here with bcrypt.
type settings struct {
	Issuer                 string           `json:"issuer"`
	Listen                 string           `json:"listen"`
	TLSCert                string           `json:"tlsCert"`
	TLSKey                 string           `json:"tlsKey"`
	GrantTypes             []string         `json:"grantTypes"`
	SkipApprovalScreen     bool             `json:"skipApprovalScreen"`
	IDTokensValidFor       string           `json:"idTokensValidFor"`
	DeviceRequestsValidFor string           `json:"deviceRequestsValidFor"`
	EnablePasswordDB       bool             `json:"enablePasswordDB"`
	Clients                []storage.Client `json:"clients"`
	Passwords              []password       `json:"passwords"`
	Connectors             []connector      `json:"connectors"`
	LogLevel               string           `json:"logLevel"`
}

type password struct {
	Email    string   `json:"email"`
	Username string   `json:"username"`
	UserID   string   `json:"userID"`
	Password string   `json:"password"`
	Groups   []string `json:"groups"`
}

type connector struct {
	Type       string          `json:"type"`
	ID         string          `json:"id"`
	Name       string          `json:"name"`
	Config     json.RawMessage `json:"config"`
	GrantTypes []string        `json:"grantTypes"`
}

func main() {
	if len(os.Args) == 2 && os.Args[1] == "version" {
		fmt.Printf("Dex Version: %s\n", version)
		return
	}
	configFile := flag.String("config", "", "settings file (JSON)")
	flag.Parse()
	if err := run(*configFile); err != nil {
		fmt.Fprintf(os.Stderr, "dex: %v\n", err)
		os.Exit(1)
	}
}

func duration(value string, fallback time.Duration) (time.Duration, error) {
	if value == "" {
		return fallback, nil
	}
	return time.ParseDuration(value)
}

func run(configFile string) error {
	data, err := os.ReadFile(configFile)
	if err != nil {
		return err
	}
	var c settings
	if err := json.Unmarshal(data, &c); err != nil {
		return fmt.Errorf("%s: %v", configFile, err)
	}
	level := slog.LevelInfo
	if c.LogLevel == "debug" {
		level = slog.LevelDebug
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	now := func() time.Time { return time.Now().UTC() }

	idTokens, err := duration(c.IDTokensValidFor, time.Hour)
	if err != nil {
		return fmt.Errorf("idTokensValidFor: %v", err)
	}
	deviceRequests, err := duration(c.DeviceRequestsValidFor, 5*time.Minute)
	if err != nil {
		return fmt.Errorf("deviceRequestsValidFor: %v", err)
	}

	var s storage.Storage = memory.New(logger)
	s = storage.WithStaticClients(s, c.Clients)
	passwords := make([]storage.Password, 0, len(c.Passwords))
	for _, p := range c.Passwords {
		// bcrypt's minimum cost: Dex refuses a lower one; the test needs no more.
		hash, err := bcrypt.GenerateFromPassword([]byte(p.Password), bcrypt.DefaultCost)
		if err != nil {
			return err
		}
		passwords = append(passwords, storage.Password{Email: p.Email, Username: p.Username, UserID: p.UserID, Hash: hash, Groups: p.Groups})
	}
	s = storage.WithStaticPasswords(s, passwords, logger)
	staticConnectors := make([]storage.Connector, 0, len(c.Connectors)+1)
	for _, conn := range c.Connectors {
		for _, gt := range conn.GrantTypes {
			if !connectors.ConnectorGrantTypes[gt] {
				return fmt.Errorf("connector %q: unknown grant type %q", conn.ID, gt)
			}
		}
		staticConnectors = append(staticConnectors, storage.Connector{ID: conn.ID, Type: conn.Type, Name: conn.Name, Config: conn.Config, GrantTypes: conn.GrantTypes})
	}
	if c.EnablePasswordDB {
		staticConnectors = append(staticConnectors, storage.Connector{ID: connectors.LocalConnector, Type: connectors.LocalConnector, Name: "Email"})
	}
	s = storage.WithStaticConnectors(s, staticConnectors)

	local := signer.LocalConfig{KeysRotationPeriod: "6h"}
	sig, err := local.Open(context.Background(), s, idTokens, now, logger)
	if err != nil {
		return fmt.Errorf("signer: %v", err)
	}

	srv, err := server.NewServer(context.Background(), server.Config{
		Issuer:                 c.Issuer,
		Storage:                s,
		AllowedGrantTypes:      c.GrantTypes,
		SkipApprovalScreen:     c.SkipApprovalScreen,
		IDTokensValidFor:       idTokens,
		DeviceRequestsValidFor: deviceRequests,
		// Rotation on, no lifetimes: Dex's defaults (cmd/dex builds the same from an empty expiry.refreshTokens).
		RefreshTokenPolicy: tokens.NewRefreshStrategy(true, 0, 0, 0, now),
		// Sessions (cmd/dex's defaults for DEX_SESSIONS_ENABLED): without them a refresh re-reads the offline session
		// from inside the refresh token's update, which in the in-memory storage waits on its own lock for ever.
		SessionConfig: &session.Config{CookieName: "dex_session", AbsoluteLifetime: 24 * time.Hour, ValidIfNotUsedFor: time.Hour, RememberMeCheckedByDefault: true},
		Logger:        logger,
		Now:           now,
		Signer:        sig,
	})
	if err != nil {
		return fmt.Errorf("server: %v", err)
	}

	cert, err := tls.LoadX509KeyPair(c.TLSCert, c.TLSKey)
	if err != nil {
		return fmt.Errorf("tls: %v", err)
	}
	listener, err := net.Listen("tcp", c.Listen)
	if err != nil {
		return err
	}
	httpServer := &http.Server{
		Handler:           srv,
		TLSConfig:         &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12},
		ReadHeaderTimeout: 10 * time.Second,
	}
	fmt.Fprintf(os.Stderr, "dex: serving %s (dex %s)\n", c.Issuer, version)

	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	done := make(chan error, 1)
	go func() { done <- httpServer.ServeTLS(listener, "", "") }()
	select {
	case err := <-done:
		if errors.Is(err, http.ErrServerClosed) {
			return nil
		}
		return err
	case <-stop:
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		return httpServer.Shutdown(ctx)
	}
}
