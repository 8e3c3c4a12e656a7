# An imaplib session for the IMAP server's tests: reads a list of steps (JSON on stdin), runs them in order on one
# connection, prints one JSON answer per step. Bytes are latin-1 strings so they cross JSON unchanged.
import imaplib, json, ssl, sys, time

def text(v):
    if isinstance(v, bytes):
        return v.decode('latin-1')
    if isinstance(v, tuple):
        return [text(x) for x in v]
    if isinstance(v, list):
        return [text(x) for x in v]
    return v

def main():
    spec = json.load(sys.stdin)
    out = []
    try:
        # Test certificates are self-signed: what is checked is that TLS is spoken, not whom to trust.
        ctx = ssl.create_default_context()
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
        if spec.get('ssl'):
            m = imaplib.IMAP4_SSL(spec['host'], spec['port'], ssl_context=ctx, timeout=15)
        else:
            m = imaplib.IMAP4(spec['host'], spec['port'], timeout=15)
    except Exception as e:
        print(json.dumps([{'error': str(e)}]))
        return
    out.append({'welcome': text(m.welcome), 'capabilities': list(m.capabilities)})
    for step in spec['steps']:
        op = step[0]
        args = step[1:]
        try:
            if op == 'starttls':
                typ, data = m.starttls(ssl_context=ctx)
                data = list(m.capabilities)
            elif op == 'login':
                typ, data = m.login(*args)
            elif op == 'plain':
                user, pw = args
                typ, data = m.authenticate('PLAIN', lambda _: ('\0' + user + '\0' + pw).encode())
            elif op == 'wait_bye':
                # NOOP until the server ends the session (or the time runs out).
                deadline = time.time() + float(args[0])
                typ, data = 'ALIVE', []
                while time.time() < deadline:
                    try:
                        m.noop()
                    except (imaplib.IMAP4.abort, OSError, EOFError) as e:
                        typ, data = 'BYE', [str(e)]
                        break
                    time.sleep(0.2)
            elif op == 'idle':
                # IDLE until an untagged line containing args[1] arrives (or args[0] seconds pass), then DONE.
                tag = m._new_tag().decode()
                m.send((tag + ' IDLE\r\n').encode())
                first = m._get_line().decode('latin-1')
                m.sock.settimeout(float(args[0]))
                lines = [first]
                try:
                    while True:
                        line = m._get_line().decode('latin-1')
                        lines.append(line)
                        if args[1] in line:
                            break
                except (OSError, imaplib.IMAP4.abort):
                    lines.append('(timeout)')
                m.sock.settimeout(15)
                m.send(b'DONE\r\n')
                while True:
                    line = m._get_line().decode('latin-1')
                    if line.startswith(tag + ' '):
                        break
                    lines.append(line)
                typ, data = line[len(tag) + 1:], lines
            elif op == 'append':
                # APPEND mailbox flags date message (the message as a latin-1 string: its bytes unchanged).
                mailbox, flags, date, message = args
                typ, data = m.append(mailbox, flags, date, message.encode('latin-1'))
            elif op == 'raw':
                # One raw command; its tagged status and the untagged responses by name.
                tag = m._new_tag().decode()
                m.send((tag + ' ' + args[0] + '\r\n').encode())
                lines = []
                while True:
                    line = m._get_line().decode('latin-1')
                    lines.append(line)
                    if line.startswith(tag + ' '):
                        break
                typ, data = lines[-1][len(tag) + 1:], lines[:-1]
            else:
                typ, data = getattr(m, op)(*args)
            out.append({'typ': text(typ), 'data': text(data)})
        except imaplib.IMAP4.abort as e:
            out.append({'abort': str(e)})
            break
        except imaplib.IMAP4.error as e:
            out.append({'error': str(e)})
        except Exception as e:
            out.append({'exception': repr(e)})
            break
    try:
        m.shutdown()
    except Exception:
        pass
    print(json.dumps(out))

main()
