/*
 * edgebench pause: the process that keeps a pod sandbox (its namespaces) alive in the e2e-argo cluster.
 * It does nothing but wait: SIGINT/SIGTERM end it with status 0, SIGCHLD reaps every exited child (as PID 1 of a
 * shared PID namespace it inherits orphans). Built static by scripts/e2e-argo/images.sh:
 *   gcc -static -Os -s -o pause pause.c
 * `pause -v` prints the version and exits.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#define EDGEBENCH_PAUSE_VERSION "3.10"

static void on_stop(int sig)
{
    (void)sig;
    _exit(0);
}

static void on_child(int sig)
{
    int saved = errno;
    (void)sig;
    /* several children can exit while one SIGCHLD is pending: collect all of them */
    while (waitpid(-1, NULL, WNOHANG) > 0)
        ;
    errno = saved;
}

static int handle(int sig, void (*fn)(int), int flags)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = fn;
    sa.sa_flags = flags;
    sigemptyset(&sa.sa_mask);
    return sigaction(sig, &sa, NULL);
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "-v") == 0) {
        printf("edgebench-pause %s\n", EDGEBENCH_PAUSE_VERSION);
        return 0;
    }
    if (getpid() != 1)
        fprintf(stderr, "pause: warning: not running as PID 1\n");
    if (handle(SIGINT, on_stop, 0) != 0 || handle(SIGTERM, on_stop, 0) != 0 ||
        handle(SIGCHLD, on_child, SA_NOCLDSTOP | SA_RESTART) != 0) {
        perror("pause: sigaction");
        return 1;
    }
    for (;;)
        pause();
}
