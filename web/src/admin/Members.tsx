import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { answerOf, client as api } from '../api';
import { membersQuery } from '../queries';
import { ConfirmButton, CreateForm, ErrorNote, Section, isManager, when } from './common';
import { ROLES, type Member, type Role } from './types';

const KEY = membersQuery().queryKey;

/** One member; the role select and remove button appear for owners and admins, and the API's refusals show here. */
function MemberRow({ member, viewer, me }: { member: Member; viewer: Role | null; me: string }) {
  const client = useQueryClient();
  const params = { path: { user_id: member.user_id } };
  const refresh = () => client.invalidateQueries({ queryKey: KEY });
  const change = useMutation({ mutationFn: (role: Role) => answerOf(api.PATCH('/app/api/members/{user_id}', { params, body: { role } })), onSettled: refresh });
  const remove = useMutation({ mutationFn: () => answerOf(api.DELETE('/app/api/members/{user_id}', { params })), onSuccess: refresh });
  const self = member.user_id === me;
  // An admin cannot touch an owner or make one; the API refuses it anyway (403), the UI does not offer it.
  const editable = isManager(viewer) && (viewer === 'owner' || member.role !== 'owner');
  const choices = viewer === 'owner' ? ROLES : ROLES.filter((r) => r !== 'owner');
  return (
    <tr>
      <td>{member.email}{self && <span className="muted"> (you)</span>}</td>
      <td>
        {editable ? (
          <>
            <label htmlFor={`role-${member.user_id}`} className="visually-hidden">Role of {member.email}</label>
            <select id={`role-${member.user_id}`} value={member.role} disabled={change.isPending} onChange={(e) => change.mutate(e.target.value as Role)}>
              {choices.map((r) => <option key={r} value={r}>{r}</option>)}
            </select>
          </>
        ) : member.role}
      </td>
      <td>{when(member.joined_at)}</td>
      {isManager(viewer) && (
        <td>
          {editable && <ConfirmButton label="Remove" name={`Remove ${member.email}`} confirm={`Really remove ${member.email}`} onConfirm={() => remove.mutate()} />}
          <ErrorNote error={change.error ?? remove.error} />
        </td>
      )}
    </tr>
  );
}

function AddMember({ viewer }: { viewer: Role | null }) {
  const client = useQueryClient();
  const [email, setEmail] = useState('');
  const [role, setRole] = useState<Role>('member');
  const [password, setPassword] = useState('');
  const add = useMutation({
    mutationFn: () => answerOf(api.POST('/app/api/members', { body: { email: email.trim(), role, ...(password ? { password } : {}) } })),
    onSuccess: () => {
      setEmail('');
      setPassword('');
      void client.invalidateQueries({ queryKey: KEY });
    },
  });
  const added = add.isSuccess && <p role="status">{add.data.email} added as {add.data.role}{add.data.user_created ? ' (new user)' : ''}.</p>;
  return (
    <CreateForm title="Add a member" action="Add member" onSubmit={() => add.mutate()} state={add} notice={added}>
      <label htmlFor="member-email">Email</label>
      <input id="member-email" type="email" required value={email} onChange={(e) => setEmail(e.target.value)} />
      <label htmlFor="member-role">Role</label>
      <select id="member-role" value={role} onChange={(e) => setRole(e.target.value as Role)}>
        {(viewer === 'owner' ? ROLES : ROLES.filter((r) => r !== 'owner')).map((r) => <option key={r} value={r}>{r}</option>)}
      </select>
      <label htmlFor="member-password">Password for a new user (leave empty to add an existing user)</label>
      <input id="member-password" type="password" autoComplete="new-password" minLength={8} value={password} onChange={(e) => setPassword(e.target.value)} />
    </CreateForm>
  );
}

export function Members({ viewer, me }: { viewer: Role | null; me: string }) {
  const list = useQuery(membersQuery());
  return (
    <Section title="Members and roles" intro="Owners and admins manage members; only an owner makes, changes or removes an owner, and the last owner stays.">
      {isManager(viewer) && <AddMember viewer={viewer} />}
      <ErrorNote error={list.error} />
      {list.data && (
        <table className="admin-table">
          <caption className="visually-hidden">Members</caption>
          <thead><tr><th scope="col">Email</th><th scope="col">Role</th><th scope="col">Joined</th>{isManager(viewer) && <th scope="col">Manage</th>}</tr></thead>
          <tbody>{list.data.members.map((m) => <MemberRow key={m.user_id} member={m} viewer={viewer} me={me} />)}</tbody>
        </table>
      )}
    </Section>
  );
}
