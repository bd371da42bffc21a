package mysql

import (
	"context"
	"fmt"
	"strings"
)

// UserKind decides what a user may do.
type UserKind string

const (
	// AdminUser is the member controller's account: it reads status, moves replication, toggles read-only,
	// kills connections, creates the other users and takes dumps. It has no SUPER, FILE or SHUTDOWN. What it
	// must hold differs per engine; see MySQLFlavor and MariaDBFlavor.
	AdminUser UserKind = "Admin"
	// ReplicationUser is the account replicas connect to their source with: REPLICATION SLAVE (MySQL 8.4 also
	// calls it REPLICATION REPLICA) and nothing else.
	ReplicationUser UserKind = "Replication"
	// ApplicationUser is the application's account: every privilege on its own database and no global
	// privilege at all, so read_only stops it (it holds neither SUPER, CONNECTION_ADMIN nor READ_ONLY ADMIN).
	ApplicationUser UserKind = "Application"
)

// User is an account to create.
type User struct {
	Kind     UserKind
	Name     string
	Password string
	// Host is the account's host pattern; empty means '%'.
	Host string
	// Database is the application user's database, created if missing. Only for ApplicationUser.
	Database string
}

func (u User) validate() error {
	if u.Name == "" {
		return fmt.Errorf("user has no name")
	}
	switch u.Kind {
	case AdminUser, ReplicationUser:
		if u.Database != "" {
			return fmt.Errorf("user %s: only an application user has a database", u.Name)
		}
	case ApplicationUser:
		if u.Database == "" {
			return fmt.Errorf("application user %s has no database", u.Name)
		}
	default:
		return fmt.Errorf("user %s: unknown kind %q", u.Name, u.Kind)
	}
	return nil
}

// ensureUser runs userStatements.
func ensureUser(ctx context.Context, db DB, u User, statements func(User) ([]string, error)) error {
	stmts, err := statements(u)
	if err != nil {
		return err
	}
	for _, s := range stmts {
		if err := db.Exec(ctx, s); err != nil {
			return fmt.Errorf("failed to set up %s user %s: %w", strings.ToLower(string(u.Kind)), u.Name, err)
		}
	}
	return nil
}

// userStatements are the statements that create or update u: both engines share them but for the admin
// user's grants, which are the flavor's.
func userStatements(u User, adminGrants []string) ([]string, error) {
	if err := u.validate(); err != nil {
		return nil, err
	}
	acct := account(u.Name, u.Host)
	pw := quoteString(u.Password)
	stmts := []string{
		// CREATE ... IF NOT EXISTS leaves an existing password alone; ALTER makes it the given one, so that
		// rotating the Secret rotates the account.
		"CREATE USER IF NOT EXISTS " + acct + " IDENTIFIED BY " + pw,
		"ALTER USER " + acct + " IDENTIFIED BY " + pw,
	}
	switch u.Kind {
	case AdminUser:
		for _, g := range adminGrants {
			stmts = append(stmts, fmt.Sprintf(g, acct))
		}
	case ReplicationUser:
		stmts = append(stmts, "GRANT REPLICATION SLAVE ON *.* TO "+acct)
	case ApplicationUser:
		stmts = append(stmts,
			"CREATE DATABASE IF NOT EXISTS "+quoteIdent(u.Database),
			"GRANT ALL PRIVILEGES ON "+grantDatabase(u.Database)+".* TO "+acct)
	}
	return stmts, nil
}

// InitScript is an SQL script that creates databases and users on one server as it is first initialised (the
// official images run /docker-entrypoint-initdb.d/*.sql in one client session), with the binary log off for
// that session: every server of a set creates them for itself, so they are no server's transactions, and no
// replica holds them as errant transactions. (The images' own MYSQL_DATABASE and MYSQL_USER would be logged:
// their entrypoints create those with the binary log on.) It runs as root, which may set sql_log_bin.
func InitScript(f Flavor, databases []string, users ...User) (string, error) {
	var b strings.Builder
	b.WriteString("-- Written by mysqlfleet: the accounts of the member controller and of replication, and the\n")
	b.WriteString("-- application's database and account.\n")
	b.WriteString("SET SESSION sql_log_bin = 0;\n")
	for _, d := range databases {
		b.WriteString("CREATE DATABASE IF NOT EXISTS " + quoteIdent(d) + ";\n")
	}
	for _, u := range users {
		stmts, err := f.UserStatements(u)
		if err != nil {
			return "", err
		}
		for _, s := range stmts {
			b.WriteString(s + ";\n")
		}
	}
	return b.String(), nil
}

// grantDatabase quotes a database name for GRANT, where _ and % are wildcards: app_db would also grant appXdb.
func grantDatabase(name string) string {
	name = strings.ReplaceAll(name, `\`, `\\`)
	name = strings.ReplaceAll(name, "_", `\_`)
	name = strings.ReplaceAll(name, "%", `\%`)
	return quoteIdent(name)
}
