-- Every API key gets a role, the members' three words (src/domain/roles.ts): `viewer` reads,
-- `developer` also sends and manages webhooks and sandbox helpers, `owner` also connects,
-- re-keys and disconnects numbers. A key is made with a role at most its maker's (a dashboard
-- member; the operator's admin API makes owner keys unless told otherwise) and keeps it: there
-- is no role change, a new key is made instead. Checked on every public API request from the
-- key's cached principal (no extra read).
-- Bound: one short word per key (~10 bytes; api_keys rows stay ~250 bytes, a few per
-- workspace, kept while the workspace exists: revoked keys stay for the audit trail).
ALTER TABLE api_keys ADD COLUMN role TEXT NOT NULL DEFAULT 'developer' CHECK (role IN ('owner', 'developer', 'viewer'));

-- Keys made before roles keep everything they could do, except number changes unless an owner
-- made them. Who made a key is recorded only in the audit log (`api_key.created`, kept 90 days
-- and at most 2,000 entries per workspace). A key is an owner key when that entry names the
-- operator's admin token, or a member of the workspace who is an owner now (the role at the time
-- is not recorded; a member since demoted or removed makes a developer key). A key with no entry
-- left (older, or pushed out) stays a developer key: an owner makes an owner key when one is needed.
UPDATE api_keys SET role = 'owner'
WHERE role = 'developer'
  AND EXISTS (
    SELECT 1 FROM audit_log a
    WHERE a.workspace_id = api_keys.workspace_id
      AND a.action = 'api_key.created'
      AND a.target_type = 'api_key'
      AND a.target_id = api_keys.id
      AND (
        a.actor_type = 'admin'
        OR (a.actor_type = 'member'
            AND EXISTS (SELECT 1 FROM members m
                        WHERE m.id = a.actor_id AND m.workspace_id = a.workspace_id AND m.role = 'owner'))
      )
  );
