-- idem schema version 3: the same functions at a lower cost per call (docs/performance.md).
-- Applied after v2.sql by `idemctl pg init`, in the same transaction that records the version;
-- never edited once released. Nothing a caller sees changes.
--
-- The table's CHECK constraints become domains. PostgreSQL reads a table's CHECK expressions
-- from their stored text again for every INSERT and UPDATE statement (about a tenth of a new id's
-- server time here); a domain's constraint is read once per session. Converting the columns
-- rewrites the table and its primary key once, under an exclusive lock: on a large table, run
-- `idemctl pg init` when a pause of that length is acceptable.

CREATE DOMAIN idem.record_id AS text CHECK (octet_length(VALUE) BETWEEN 1 AND 1024);
CREATE DOMAIN idem.record_state AS text CHECK (VALUE IN ('STARTED', 'COMPLETED', 'FAILED'));
CREATE DOMAIN idem.failure_policy AS text CHECK (VALUE IN ('retryable', 'terminal'));

ALTER TABLE idem.records
    DROP CONSTRAINT records_id_check,
    DROP CONSTRAINT records_state_check,
    DROP CONSTRAINT records_policy_check,
    ALTER COLUMN id TYPE idem.record_id,
    ALTER COLUMN state TYPE idem.record_state,
    ALTER COLUMN policy TYPE idem.failure_policy;

-- acquire as in v2, but a new id is inserted first, in one statement, instead of being looked up
-- and then inserted: the lookup is what duplicates need, and they have it in the loop.
CREATE OR REPLACE FUNCTION idem.acquire(id text, lease interval DEFAULT '30 seconds', fingerprint bytea DEFAULT NULL,
                             proposed_token uuid DEFAULT NULL, stale_keep interval DEFAULT '1 hour')
RETURNS TABLE (outcome text, token uuid, fence bigint, attempt integer, response bytea, error text,
               time_left interval, lease_until timestamptz, takeover boolean, stored_fingerprint bytea,
               server_time timestamptz, phase text, phase_data bytea)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
    t  timestamptz := clock_timestamp();
    tk uuid := coalesce(acquire.proposed_token, gen_random_uuid());
    r  idem.records%ROWTYPE;
BEGIN
    IF acquire.lease IS NULL OR acquire.lease <= interval '0' THEN
        RAISE EXCEPTION 'idem.acquire: lease must be positive' USING ERRCODE = '22023';
    END IF;
    server_time := t;
    -- A new id, the common case, in one statement. For an existing id it inserts nothing (and
    -- spends a fence: fences rise, they need not be dense) and the loop below decides.
    INSERT INTO idem.records AS x (id, state, token, fence, lease_until, expires_at, fingerprint,
                                   created_at, started_at)
    VALUES (acquire.id, 'STARTED', tk, nextval('idem.fence'), t + acquire.lease,
            t + acquire.lease + acquire.stale_keep, acquire.fingerprint, t, t)
    ON CONFLICT ON CONSTRAINT records_pkey DO NOTHING
    RETURNING x.fence INTO fence;
    IF FOUND THEN
        outcome := 'acquired'; token := tk; attempt := 1; takeover := false;
        lease_until := t + acquire.lease; time_left := acquire.lease;
        RETURN NEXT;
        RETURN;
    END IF;
    LOOP
        -- Answers that change nothing are read without a row lock (locking writes to the row):
        -- a live COMPLETED row or terminal failure, and a payload mismatch, stay what they are
        -- until they expire or an operator purges them. Everything else is decided under the lock.
        SELECT * INTO r FROM idem.records AS x WHERE x.id = acquire.id;
        IF FOUND AND r.expires_at > t THEN
            fence := r.fence; attempt := r.attempt; takeover := false;
            IF acquire.fingerprint IS NOT NULL AND r.fingerprint IS NOT NULL
               AND r.fingerprint <> acquire.fingerprint THEN
                outcome := 'mismatch'; stored_fingerprint := r.fingerprint;
                RETURN NEXT;
                RETURN;
            END IF;
            IF r.state = 'COMPLETED' THEN
                outcome := 'duplicate'; response := r.response;
                RETURN NEXT;
                RETURN;
            END IF;
            IF r.state = 'FAILED' AND r.policy = 'terminal' THEN
                outcome := 'failed'; error := r.error;
                RETURN NEXT;
                RETURN;
            END IF;
        END IF;
        IF FOUND THEN
            SELECT * INTO r FROM idem.records AS x WHERE x.id = acquire.id FOR UPDATE;
        END IF;
        IF NOT FOUND THEN
            INSERT INTO idem.records AS x (id, state, token, fence, lease_until, expires_at, fingerprint,
                                           created_at, started_at)
            VALUES (acquire.id, 'STARTED', tk, nextval('idem.fence'), t + acquire.lease,
                    t + acquire.lease + acquire.stale_keep, acquire.fingerprint, t, t)
            ON CONFLICT ON CONSTRAINT records_pkey DO NOTHING
            RETURNING x.fence INTO fence;
            IF FOUND THEN
                outcome := 'acquired'; token := tk; attempt := 1; takeover := false;
                lease_until := t + acquire.lease; time_left := acquire.lease;
                RETURN NEXT;
                RETURN;
            END IF;
            CONTINUE; -- another transaction inserted it and committed: read and lock that row
        END IF;

        IF r.expires_at <= t THEN -- expired: as if absent, a fresh first attempt
            UPDATE idem.records AS x SET state = 'STARTED', token = tk, fence = nextval('idem.fence'),
                   attempt = 1, lease_until = t + acquire.lease, expires_at = t + acquire.lease + acquire.stale_keep,
                   fingerprint = acquire.fingerprint, response = NULL, error = NULL, policy = NULL,
                   created_at = t, started_at = t, finished_at = NULL, op = NULL, op_by = NULL,
                   op_at = NULL, op_reason = NULL, phase = NULL, phase_data = NULL, phase_at = NULL
             WHERE x.id = acquire.id RETURNING x.fence INTO fence;
            outcome := 'acquired'; token := tk; attempt := 1; takeover := false;
            lease_until := t + acquire.lease; time_left := acquire.lease;
            RETURN NEXT;
            RETURN;
        END IF;

        fence := r.fence; attempt := r.attempt; takeover := false;
        IF acquire.fingerprint IS NOT NULL AND r.fingerprint IS NOT NULL
           AND r.fingerprint <> acquire.fingerprint THEN
            outcome := 'mismatch'; stored_fingerprint := r.fingerprint;
            RETURN NEXT;
            RETURN;
        END IF;
        IF r.state = 'COMPLETED' THEN
            outcome := 'duplicate'; response := r.response;
            RETURN NEXT;
            RETURN;
        END IF;
        IF r.state = 'FAILED' AND r.policy = 'terminal' THEN
            outcome := 'failed'; error := r.error;
            RETURN NEXT;
            RETURN;
        END IF;
        IF r.state = 'STARTED' AND r.token = tk THEN -- the same owner asking again (a lost reply)
            outcome := 'acquired'; token := tk; lease_until := r.lease_until;
            time_left := greatest(r.lease_until - t, interval '0');
            phase := r.phase; phase_data := r.phase_data;
            RETURN NEXT;
            RETURN;
        END IF;
        IF r.state = 'STARTED' AND r.lease_until > t THEN
            outcome := 'in_progress'; time_left := r.lease_until - t; lease_until := r.lease_until;
            RETURN NEXT;
            RETURN;
        END IF;
        -- a stale lease to take over, or a retryable failure (or a force-failed one): a new attempt
        takeover := r.state = 'STARTED';
        UPDATE idem.records AS x SET state = 'STARTED', token = tk, fence = nextval('idem.fence'),
               attempt = r.attempt + 1, lease_until = t + acquire.lease,
               expires_at = t + acquire.lease + acquire.stale_keep,
               fingerprint = coalesce(r.fingerprint, acquire.fingerprint), response = NULL, error = NULL,
               policy = NULL, started_at = t, finished_at = NULL
         WHERE x.id = acquire.id RETURNING x.fence, x.attempt INTO fence, attempt;
        outcome := 'acquired'; token := tk; lease_until := t + acquire.lease; time_left := acquire.lease;
        phase := r.phase; phase_data := r.phase_data; -- where the earlier attempt got to
        RETURN NEXT;
        RETURN;
    END LOOP;
END
$$;

