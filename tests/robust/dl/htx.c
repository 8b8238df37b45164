/* libhtx.so: a small library that the dlopen tests load by path, by $ORIGIN and by name. */
int htx_value(void);

int htx_value(void)
{
	return 42;
}
