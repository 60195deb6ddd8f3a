import { useSession } from '../app/session.tsx';
import { Identity } from './Identity.tsx';

/** Who the cluster says you are (`#/me`, the name in the header links here). */
export function MePage() {
  const { me, signOut } = useSession();
  return <Identity me={me} onSignOut={signOut} />;
}
