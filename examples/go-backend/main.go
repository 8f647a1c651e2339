// Command go-backend is a web backend that guards a PostgreSQL read-modify-write with a fencelock
// lease (deposit.go). Configuration from the environment: FENCELOCK_ENDPOINT (comma-separated),
// FENCELOCK_API_KEY, FENCELOCK_CACERT as the CLI reads them, and DATABASE_URL (lib/pq: add
// sslmode=disable, or set PGSSLMODE=disable, for a server without TLS). Flags: -listen HOST:PORT
// (default 127.0.0.1:8000), -init-db to create the table (schema.sql).
package main

import (
	"context"
	"database/sql"
	_ "embed"
	"flag"
	"log"
	"net/http"
	"os"
	"time"

	_ "github.com/lib/pq"

	"fencelock.dev/fencelock"
)

//go:embed schema.sql
var schema string

func main() {
	listen := flag.String("listen", "127.0.0.1:8000", "address to serve on")
	initDB := flag.Bool("init-db", false, "create the accounts table (schema.sql)")
	flag.Parse()

	locks, err := fencelock.New(fencelock.OptionsFromEnvironment())
	if err != nil {
		log.Fatal(err)
	}
	db, err := sql.Open("postgres", os.Getenv("DATABASE_URL"))
	if err != nil {
		log.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if *initDB {
		if _, err := db.ExecContext(ctx, schema); err != nil {
			log.Fatal(err)
		}
	}
	bank, err := NewBank(ctx, locks, db)
	if err != nil {
		log.Fatal(err)
	}
	server := &http.Server{Addr: *listen, Handler: bank, ReadHeaderTimeout: 5 * time.Second}
	log.Printf("go-backend: listening on http://%s", *listen)
	log.Fatal(server.ListenAndServe())
}
