/* A program with too little code for one huge page. */
#include <stdio.h>

int main(void)
{
	printf("small ok\n");
	return 0;
}
