/*
 * forker [PROGRAM ARG...]: runs its generated code, forks a child that runs
 * it too (after the preload moved it, in the parent, before main), and has
 * the child exec PROGRAM, which inherits LD_PRELOAD and the settings.
 */
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../bigtext.h"

int main(int argc, char **argv)
{
	pid_t pid;
	int st = 0;

	printf("parent sum %lu\n", bigtext_sum(3));
	fflush(stdout);
	pid = fork();
	if (pid < 0)
		return 1;
	if (pid == 0) {
		printf("child sum %lu\n", bigtext_sum(3));
		fflush(stdout);
		if (argc > 1) {
			execv(argv[1], argv + 1);
			_exit(127);
		}
		_exit(0);
	}
	if (waitpid(pid, &st, 0) != pid)
		return 1;
	printf("child status %d\n", WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
	return 0;
}
